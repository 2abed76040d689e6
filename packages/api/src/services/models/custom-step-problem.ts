/**
 * A problem of an uploaded custom step at its place in the file: what the
 * type check (custom-step-compile.ts) and the signature reader
 * (custom-step-signature.ts) both report, and how the console shows it.
 */
/** One compile problem, positions 1-based. */
export interface CompileProblem {
  file: string;
  line: number;
  column: number;
  message: string;
}

/** "model.ts:3:7 Type 'string' is not assignable to type 'number'." */
export function formatProblem(problem: CompileProblem): string {
  return problem.file === "" ? problem.message : `${problem.file}:${problem.line}:${problem.column} ${problem.message}`;
}
