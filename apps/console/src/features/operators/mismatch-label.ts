import type { EdgeProblem } from "@operon/operator-spec/problem-subjects";
import type { TensorMismatch } from "@operon/operator-spec/tensor-compatibility";

/** "⚠ datatype INT32 → FP32" / "⚠ shape [-1,16] → [-1,8]": what the producer gives, then what the consumer takes. */
export function mismatchLabel(problems: ReadonlyArray<EdgeProblem | TensorMismatch>): string {
  return `⚠ ${problems.map((p) => `${p.what} ${p.given} → ${p.expected}`).join("; ")}`;
}
