import { AppError } from "../../app-error.js";

/** The most raw bytes one try-it request may carry in binary inputs: a photo, not a dataset (the API takes 8 MiB bodies, base64 adds a third). */
export const MAX_TRY_BYTES = 6 * 1024 * 1024;

/** A try-it input tensor as the console sends it: KServe v2 JSON, or (encoding "base64") a BYTES tensor of raw files. */
export interface TryInputTensor {
  name: string;
  datatype: string;
  shape: number[];
  data: unknown[];
  parameters?: Record<string, unknown> | undefined;
  /** "base64": each element is base64 of raw bytes (a PNG from the file picker), sent to the gateway as binary data. */
  encoding?: "base64" | undefined;
}

/** The request's inputs as the gateway takes them: the JSON header's tensors and, in their order, the binary ones' bytes. */
export interface GatewayInputs {
  inputs: Array<Record<string, unknown>>;
  binaries: Buffer[];
}

/**
 * Splits try-it inputs into the JSON header's tensors and the binary data that follows it (Triton's binary tensor
 * extension): a base64 tensor becomes `parameters.binary_data_size` in the header and its decoded elements after it.
 * Refused, naming the input (fieldErrors at `inputs[i].data`): base64 on a non-BYTES input, an element that is not
 * base64, an element count that is not the shape's, and more than MAX_TRY_BYTES in all.
 */
export function gatewayInputsOf(tensors: readonly TryInputTensor[]): GatewayInputs {
  const binaries: Buffer[] = [];
  let total = 0;
  const inputs = tensors.map((tensor, index) => {
    const { encoding, ...json } = tensor;
    if (encoding !== "base64") return json;
    const bytes = bytesTensorOf(tensor, index, MAX_TRY_BYTES - total);
    total += bytes.length - 4 * tensor.data.length;
    binaries.push(bytes);
    return {
      name: tensor.name,
      datatype: tensor.datatype,
      shape: tensor.shape,
      parameters: { ...tensor.parameters, binary_data_size: bytes.length },
    };
  });
  return { inputs, binaries };
}

/**
 * A BYTES input whose elements are base64 (raw files: PNG bytes are not UTF-8 text, so JSON cannot carry them),
 * in Triton's binary tensor layout: per element a 4-byte little-endian length, then the bytes.
 */
function bytesTensorOf(tensor: TryInputTensor, index: number, budget: number): Buffer {
  const refuse = (message: string) =>
    new AppError("VALIDATION_FAILED", `input '${tensor.name}': ${message}`, {
      fieldErrors: [{ path: `inputs[${index}].data`, message }],
    });
  if (tensor.datatype !== "BYTES") throw refuse(`base64 data is for BYTES inputs, not ${tensor.datatype}`);
  const expected = tensor.shape.reduce((count, dim) => count * dim, 1);
  if (tensor.data.length !== expected)
    throw refuse(`shape [${tensor.shape.join(", ")}] holds ${expected} elements, but ${tensor.data.length} were given`);
  const parts: Buffer[] = [];
  let total = 0;
  for (const element of tensor.data) {
    if (typeof element !== "string" || !/^[A-Za-z0-9+/]*={0,2}$/.test(element) || element.length % 4 !== 0)
      throw refuse("each element must be base64 (standard alphabet, with padding)");
    // Checked before decoding: a hostile request is refused on its length, not after allocating it.
    total += (element.length / 4) * 3;
    if (total > budget)
      throw refuse(`the files add up to more than ${MAX_TRY_BYTES / 1024 / 1024} MiB; try a smaller one`);
    const bytes = Buffer.from(element, "base64");
    const length = Buffer.alloc(4);
    length.writeUInt32LE(bytes.length);
    parts.push(length, bytes);
  }
  return Buffer.concat(parts);
}
