/**
 * A long name (a 69-character operator, an email, a backend) on one line, cut with an ellipsis where its cell
 * ends, the whole name on hover (`title`) and for screen readers (the text is all there, only clipped). It never
 * breaks inside a word, and the numeric columns beside it keep their room (issue 27, item 5).
 * `size` picks the widest it may grow: "name" for a table's row header, "short" for secondary columns.
 */
export function TruncatedText({
  text,
  size = "name",
  as: Tag = "span",
}: {
  text: string;
  size?: "name" | "short" | "wide";
  as?: "span" | "code";
}) {
  return (
    <Tag className={`truncated truncated-${size}`} title={text}>
      {text}
    </Tag>
  );
}
