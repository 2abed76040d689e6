/**
 * Whether the two ends of a connection agree: the one rule the gateway's
 * edge checks (operator-validation.ts) and the console's graph editor both
 * apply, so a connection the editor flags as it is dropped is the one the
 * gateway refuses, with the same words.
 *
 * Shapes are full shapes: with the batch dimension (-1) first when the
 * operator or model batches (fullShape). -1 matches any size.
 */

/** A tensor end as the check sees it: a KServe datatype name and a full shape. */
export interface TensorEnd {
  datatype: string;
  shape: readonly number[];
}

/** What does not match: the producer's side ("given"), then the consumer's ("expected"). */
export interface TensorMismatch {
  what: "datatype" | "shape";
  given: string;
  expected: string;
}

/** dims as the wire sees them: the batch dimension (-1, any size) first when the tensor's owner batches. */
export function fullShape(maxBatchSize: number, dims: readonly number[]): number[] {
  return maxBatchSize > 0 ? [-1, ...dims] : [...dims];
}

/** Same rank, and every dimension equal or -1 (any size) on either side. */
export function shapesCompatible(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((dim, i) => dim === -1 || b[i] === -1 || dim === b[i]);
}

/** "[-1,16]": how problem messages write a shape (problem-subjects.ts parses them back). */
export function formatShape(shape: readonly number[]): string {
  return `[${shape.join(",")}]`;
}

/** The first disagreement of a producer with its consumer (datatype before shape), or undefined when they agree. */
export function tensorMismatch(given: TensorEnd, expected: TensorEnd): TensorMismatch | undefined {
  if (given.datatype !== expected.datatype)
    return { what: "datatype", given: given.datatype, expected: expected.datatype };
  if (!shapesCompatible(given.shape, expected.shape))
    return { what: "shape", given: formatShape(given.shape), expected: formatShape(expected.shape) };
  return undefined;
}
