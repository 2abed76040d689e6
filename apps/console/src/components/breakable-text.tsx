import { Fragment } from "react";

/**
 * Identifiers (emails, model and platform names, paths) offered to the line
 * breaker after their separators: `ada@<wbr>example.<wbr>com`,
 * `onnxruntime_<wbr>onnx`. A narrow column then wraps them there instead of
 * between two letters (which `overflow-wrap: anywhere` leaves as a last resort).
 */
export function BreakableText({ text }: { text: string }) {
  const parts = text.split(/(?<=[@._/:-])(?=[^@._/:\s-])/);
  if (parts.length === 1) return <>{text}</>;
  return (
    <>
      {parts.map((part, index) => (
        <Fragment key={index}>
          {index > 0 ? <wbr /> : null}
          {part}
        </Fragment>
      ))}
    </>
  );
}
