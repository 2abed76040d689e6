import { elementCount, isDataType } from "@operon/protocol/datatypes";
import { OperonError } from "@operon/protocol/errors";
import type { InferInput, InferRequest, InferResponse, ModelMetadata } from "@operon/protocol/inference";
import { bufferToJsonText, jsonDataToBuffer } from "@operon/protocol/json-tensor-codec";
import type { Parameters } from "@operon/protocol/tensor";
import { checkReservedParameters, type InferTarget, inferRequestFor } from "./http-infer-request.js";
import { expectObject, invalidField, kindOf, optionalParameters, optionalString } from "./http-json-fields.js";

/**
 * Triton's generate extension (extension_generate.md): a flat JSON object
 * instead of tensors. Request `{id?, text_input, parameters?, ...}`: each
 * key named like a model input becomes that input, one element of the
 * input's datatype (a string for BYTES, a number, a boolean) with shape [1],
 * or a 1-D tensor from an array; [1, ...] when the model batches. Any
 * other key becomes a request parameter, as Triton passes it ("as
 * parameters or tensors based on model specification"). Response
 * `{model_name, model_version, id?, <output>: value, ...}`: an output of
 * one element is a scalar, any other an array (flattened).
 */
export function decodeGenerateBody(
  json: unknown,
  target: InferTarget,
  metadata: ModelMetadata,
  batched: boolean,
): InferRequest {
  if (json === undefined)
    throw new OperonError(
      "INVALID_ARG",
      'the generate request body is empty; expected a JSON object such as {"text_input": "..."}',
    );
  const body = expectObject(json, "request body");
  const id = optionalString(body["id"], "id");
  const parameters: Parameters = optionalParameters(body["parameters"], "parameters") ?? {};
  const inputs: InferInput[] = [];
  const byName = new Map(metadata.inputs.map((input) => [input.name, input]));
  for (const [key, value] of Object.entries(body)) {
    if (key === "id" || key === "parameters") continue;
    const input = byName.get(key);
    if (input === undefined) {
      if (typeof value !== "string" && typeof value !== "number" && typeof value !== "boolean") {
        throw invalidField(
          key,
          `is neither an input of model '${target.modelName}' (${[...byName.keys()].map((name) => `'${name}'`).join(", ") || "none"}) nor a parameter (a string, number or boolean); got ${kindOf(value)}`,
        );
      }
      parameters[key] = value;
      continue;
    }
    inputs.push(generateInput(key, input.datatype, value, batched));
  }
  checkReservedParameters(parameters);
  const request = inferRequestFor(target, parameters, inputs);
  if (id !== undefined) request.id = id;
  return request;
}

function generateInput(name: string, datatype: string, value: unknown, batched: boolean): InferInput {
  if (!isDataType(datatype)) throw new OperonError("INTERNAL", `input '${name}' has unknown datatype '${datatype}'`);
  let data: unknown[];
  if (Array.isArray(value)) data = value.flat(Infinity);
  else if (typeof value === "string" || typeof value === "number" || typeof value === "boolean") data = [value];
  else throw invalidField(name, `must be a string, number, boolean or an array of them, got ${kindOf(value)}`);
  if (typeof data[0] === "string" && datatype !== "BYTES") {
    throw invalidField(name, `is a string, but input '${name}' is ${datatype}`);
  }
  const shape = batched ? [1, data.length] : [data.length];
  return { name, datatype, shape, data: jsonDataToBuffer(name, datatype, shape, data) };
}

/** The generate response object as JSON text (64-bit integers with all their digits). */
export function encodeGenerateResponse(response: InferResponse, requestId: string | undefined): string {
  const fields = [
    `"model_name":${JSON.stringify(response.modelName)}`,
    `"model_version":${JSON.stringify(response.modelVersion)}`,
  ];
  const id = response.id ?? requestId;
  if (id !== undefined && id !== "") fields.push(`"id":${JSON.stringify(id)}`);
  for (const output of response.outputs) {
    if (output.name === "model_name" || output.name === "model_version" || output.name === "id") continue;
    const text = bufferToJsonText(output);
    fields.push(`${JSON.stringify(output.name)}:${elementCount(output.shape) === 1 ? text.slice(1, -1) : text}`);
  }
  return `{${fields.join(",")}}`;
}
