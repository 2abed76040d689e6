import type { OutputColumn } from "./job-files.js";
import type { RowRequest } from "./row-request.js";

/**
 * Several rows of a job in one inference request, where the target batches
 * (max_batch_size > 0): each row's request (batch 1) joined along the batch
 * dimension, and the answer's outputs split back per row. How many rows a
 * request carries, and why, is rows-per-request.ts's.
 */
/**
 * One request of `requests.length` rows; undefined when the rows' shapes differ past the batch dimension (a
 * list column of varying length), which the caller then sends one by one.
 */
export function joinRequests(requests: readonly RowRequest[]): RowRequest | undefined {
  const first = requests[0];
  if (first === undefined) return undefined;
  if (requests.length === 1) return first;
  const inputs: Array<Record<string, unknown>> = [];
  for (const [index, input] of first.header.inputs.entries()) {
    const shape = input["shape"] as number[];
    const same = requests.every((request) => {
      const other = request.header.inputs[index]?.["shape"] as number[] | undefined;
      return other !== undefined && other.length === shape.length && other.every((dim, i) => dim === shape[i]);
    });
    if (!same || shape[0] !== 1) return undefined;
    const joined: Record<string, unknown> = { ...input, shape: [requests.length, ...shape.slice(1)] };
    if (Array.isArray(input["data"]))
      joined["data"] = requests.flatMap((request) => request.header.inputs[index]?.["data"] as unknown[]);
    const parameters = input["parameters"] as { binary_data_size?: number } | undefined;
    if (parameters?.binary_data_size !== undefined)
      joined["parameters"] = {
        ...parameters,
        binary_data_size: requests.reduce(
          (sum, request) =>
            sum +
            ((request.header.inputs[index]?.["parameters"] as { binary_data_size: number }).binary_data_size ?? 0),
          0,
        ),
      };
    inputs.push(joined);
  }
  // Binary tensors follow the inputs' order; a BYTES tensor of n elements is its elements' length-prefixed bytes in a row.
  const binaries = first.binaries.map((_, index) =>
    Buffer.concat(requests.map((request) => request.binaries[index] as Buffer)),
  );
  return { header: { ...first.header, inputs }, binaries };
}

/**
 * Each row's output values from the answer to a request of `rows` rows: a scalar for one element a row, else
 * the row's flat list. Throws when an output's element count is not a multiple of the rows (the caller sends
 * the rows one by one then).
 */
export function splitOutputs(
  body: Record<string, unknown>,
  outputs: readonly OutputColumn[],
  rows: number,
): Array<Record<string, unknown>> {
  const got = (body["outputs"] ?? []) as Array<{ name?: string; data?: unknown[] }>;
  const values: Array<Record<string, unknown>> = Array.from({ length: rows }, () => ({}));
  for (const output of outputs) {
    const data = got.find((tensor) => tensor.name === output.name)?.data;
    if (data === undefined) continue;
    if (data.length % rows !== 0)
      throw new Error(`output '${output.name}' has ${data.length} element(s), not a multiple of the ${rows} rows sent`);
    const each = data.length / rows;
    for (let row = 0; row < rows; row += 1) {
      const slice = data.slice(row * each, (row + 1) * each);
      (values[row] as Record<string, unknown>)[output.name] = output.type.endsWith("[]") ? slice : (slice[0] ?? null);
    }
  }
  return values;
}
