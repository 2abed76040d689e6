import { AppError } from "../../app-error.js";
import { gatewayInputsOf } from "../gateway/binary-inputs.js";
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
    const { inputs, binaries } = gatewayInputsOf(input.inputs);
    const body = {
      inputs,
      ...(input.outputs !== undefined ? { outputs: input.outputs.map((output) => ({ name: output })) } : {}),
    };
    const response =
      binaries.length > 0
        ? await this.ws.gateway.inferBinary(name, input.version?.toString(), body, binaries)
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
