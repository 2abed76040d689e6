import { Fragment } from "react";

/**
 * Text that may name commands or flags between backticks (the API's
 * messages do: "use the one `operon serve` printed"): the quoted parts are
 * shown as code, never as raw backticks. An unpaired backtick stays text.
 */
export function TextWithCode({ text }: { text: string }) {
  const parts = text.split("`");
  if (parts.length < 3) return <>{text}</>;
  const closed = parts.length % 2 === 1 ? parts : [...parts.slice(0, -2), `${parts.at(-2)}\`${parts.at(-1)}`];
  return (
    <>
      {closed.map((part, index) =>
        index % 2 === 1 ? <code key={index}>{part}</code> : <Fragment key={index}>{part}</Fragment>,
      )}
    </>
  );
}
