import { AppError } from "../../app-error.js";
import type { InferInput, InferResult } from "./model-types.js";
import type { ModelWorkspace } from "./model-workspace.js";

/** The console's try-it panel: one inference through the gateway. */
export class ModelInferProxy {
  constructor(private readonly ws: ModelWorkspace) {}

  /** One inference through the gateway's KServe v2 JSON endpoint (the console's try-it panel). */
  async infer(
    name: string,
    input: { version?: number | undefined; inputs: InferInput[]; outputs?: string[] | undefined },
  ): Promise<InferResult> {
    input.inputs.forEach((tensor, index) => {
      const expected = tensor.shape.reduce((count, dim) => count * dim, 1);
      if (tensor.data.length !== expected) {
        throw new AppError(
          "VALIDATION_FAILED",
          `input '${tensor.name}' has shape [${tensor.shape.join(", ")}], which holds ${expected} values, but ${tensor.data.length} were given`,
          {
            fieldErrors: [{ path: `inputs[${index}].data`, message: `expected ${expected} values` }],
          },
        );
      }
    });
    const binaries = input.inputs.map((tensor, index) =>
      tensor.encoding === "base64" ? bytesTensorOf(tensor, index) : undefined,
    );
    const body = {
      inputs: input.inputs.map((tensor, index) => {
        const binary = binaries[index];
        return binary === undefined
          ? { name: tensor.name, datatype: tensor.datatype, shape: tensor.shape, data: tensor.data }
          : {
              name: tensor.name,
              datatype: tensor.datatype,
              shape: tensor.shape,
              parameters: { binary_data_size: binary.length },
            };
      }),
      ...(input.outputs !== undefined ? { outputs: input.outputs.map((output) => ({ name: output })) } : {}),
    };
    const present = binaries.filter((binary): binary is Buffer => binary !== undefined);
    const response =
      present.length > 0
        ? await this.ws.gateway.inferBinary(name, input.version?.toString(), body, present)
        : await this.ws.gateway.infer(name, input.version?.toString(), body);
    const answer = response.body as { model_name?: string; model_version?: string; outputs?: InferResult["outputs"] };
    return {
      modelName: answer.model_name ?? name,
      modelVersion: answer.model_version ?? "",
      outputs: answer.outputs ?? [],
      latencyMs: Math.round(response.latencyMs * 1000) / 1000,
    };
  }
}

/** The most raw bytes one try-it request may carry in binary inputs: a photo, not a dataset (the API takes 8 MiB bodies, base64 adds a third). */
export const MAX_TRY_BYTES = 6 * 1024 * 1024;

/**
 * A BYTES input whose elements are base64 (raw files: PNG bytes are not UTF-8 text, so JSON cannot carry them),
 * in Triton's binary tensor layout: per element a 4-byte little-endian length, then the bytes.
 */
function bytesTensorOf(tensor: InferInput, index: number): Buffer {
  const refuse = (message: string) =>
    new AppError("VALIDATION_FAILED", `input '${tensor.name}': ${message}`, {
      fieldErrors: [{ path: `inputs[${index}].data`, message }],
    });
  if (tensor.datatype !== "BYTES") throw refuse(`base64 data is for BYTES inputs, not ${tensor.datatype}`);
  const parts: Buffer[] = [];
  let total = 0;
  for (const element of tensor.data) {
    if (typeof element !== "string" || !/^[A-Za-z0-9+/]*={0,2}$/.test(element) || element.length % 4 !== 0)
      throw refuse("each element must be base64 (standard alphabet, with padding)");
    // Checked before decoding: a hostile request is refused on its length, not after allocating it.
    total += (element.length / 4) * 3 + 4;
    if (total > MAX_TRY_BYTES + 4 * tensor.data.length)
      throw refuse(`the files add up to more than ${MAX_TRY_BYTES / 1024 / 1024} MiB; try a smaller one`);
    const bytes = Buffer.from(element, "base64");
    const length = Buffer.alloc(4);
    length.writeUInt32LE(bytes.length);
    parts.push(length, bytes);
  }
  return Buffer.concat(parts);
}
