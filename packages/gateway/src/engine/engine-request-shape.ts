import { OperonError } from "@operon/protocol/errors";
import type { InferRequest, InferResponse } from "@operon/protocol/inference";
import type { Parameters, Tensor } from "@operon/protocol/tensor";
import type { ServedVersion } from "../repository/model-manager.js";
import { resolveReshape, validateInferRequest } from "../signature/model-signature.js";
import type { RequestContext } from "../scheduling/request-scheduler.js";
import { priorityLevelOf, queueTimeoutNsOf } from "../scheduling/scheduler-policy.js";
import type { RunnerRequest } from "../scheduling/version-runner.js";

/**
 * A request's shape on both sides of the engine (engine.ts): a client's
 * request validated and turned into what its version's runner schedules
 * (BLS depth, priority, queue timeout, wire parameters), and the runner's
 * outputs turned back into the client's response (order, reshape, id).
 */

/** The request parameter that carries a request's BLS depth (0 or absent: a client's request). */
export const BLS_DEPTH_PARAMETER = "operon_bls_depth";

/**
 * Deepest BLS nesting served: a model calling a model ... 8 levels down.
 * A request beyond it fails INVALID_ARG, which stops a model that calls
 * itself (directly or through others) without end.
 */
export const MAX_BLS_DEPTH = 8;

/** The response to `request` from `served` with these outputs (the client's id echoed). */
export function responseOf(request: InferRequest, served: ServedVersion, outputs: Tensor[]): InferResponse {
  const response: InferResponse = { modelName: request.modelName, modelVersion: served.version, outputs };
  if (request.id !== undefined && request.id !== "") response.id = request.id;
  return response;
}

/** Validates a request against the version and turns it into what its runner schedules. */
export function scheduledRequestOf(
  served: ServedVersion,
  request: InferRequest,
  maxBytesElements: number,
): RunnerRequest {
  const blsDepth = blsDepthOf(request);
  const validated = validateInferRequest(served.signature, request, maxBytesElements);
  const policy = served.instances.policy;
  const level = priorityLevelOf(policy, request.parameters);
  const parameters = wireParameters(request.parameters);
  // Built field by field, not by spreads: this runs for every request, and optional fields stay absent.
  const context: RequestContext = { blsDepth };
  if (request.id !== undefined && request.id !== "") context.id = request.id;
  if (request.logId !== undefined) context.logIds = [request.logId];
  if (parameters !== undefined) context.parameters = parameters;
  if (request.deviceOutputs !== undefined && request.deviceOutputs.length > 0)
    context.deviceOutputs = request.deviceOutputs;
  const scheduled: RunnerRequest = {
    inputs: validated.inputs,
    outputNames: validated.outputNames,
    batchSize: validated.batchSize,
    level,
    timeoutNs: queueTimeoutNsOf(policy, level, request.parameters),
    parameters: request.parameters,
    context,
  };
  // A batch job's request (auth/key-priority.ts): rides along in the executions online requests start.
  if (request.trafficClass === "batch") scheduled.background = true;
  if (request.signal !== undefined) {
    context.signal = request.signal;
    scheduled.signal = request.signal;
  }
  return scheduled;
}

/** The request's BLS depth (operon_bls_depth); INVALID_ARG when malformed or beyond MAX_BLS_DEPTH. */
function blsDepthOf(request: InferRequest): number {
  const raw = request.parameters[BLS_DEPTH_PARAMETER];
  if (raw === undefined) return 0;
  const depth = typeof raw === "bigint" ? Number(raw) : raw;
  if (typeof depth !== "number" || !Number.isSafeInteger(depth) || depth < 0) {
    throw new OperonError(
      "INVALID_ARG",
      `parameter '${BLS_DEPTH_PARAMETER}' must be a non-negative integer, got ${JSON.stringify(String(raw))}`,
    );
  }
  if (depth > MAX_BLS_DEPTH) {
    throw new OperonError(
      "INVALID_ARG",
      `BLS depth limit exceeded: a call to model '${request.modelName}' at BLS depth ${depth}, beyond the limit of ${MAX_BLS_DEPTH} (does a model call itself, directly or through others, without end?)`,
    );
  }
  return depth;
}

/** Parameters as the worker wire carries them (64-bit integers beyond 2^53 as decimal strings); undefined when none. */
function wireParameters(parameters: Parameters): Record<string, string | number | boolean> | undefined {
  let wire: Record<string, string | number | boolean> | undefined;
  for (const key in parameters) {
    if (!Object.hasOwn(parameters, key)) continue;
    const value = parameters[key]!;
    (wire ??= {})[key] = typeof value === "bigint" ? value.toString() : value;
  }
  return wire;
}

/** Orders outputs as requested (else as configured) and maps reshaped outputs back to their config dims. */
export function restoreOutputShapes(
  served: ServedVersion,
  outputs: Tensor[],
  requested: string[] | undefined,
): Tensor[] {
  const configs = served.signature.outputs;
  if (requested === undefined && inConfigOrderAsIs(configs, outputs)) return outputs;
  const order = requested ?? configs.map((output) => output.name);
  const byName = new Map(outputs.map((output) => [output.name, output]));
  const ordered: Tensor[] = [];
  for (const name of order) {
    const tensor = byName.get(name);
    if (tensor === undefined) continue;
    const config = configs.find((output) => output.name === name);
    if (config?.reshape !== undefined) {
      const batched = served.signature.maxBatchSize > 0;
      const modelShape = batched ? tensor.shape.slice(1) : tensor.shape;
      const dims = resolveReshape(config.dims, modelShape);
      ordered.push({ ...tensor, shape: batched ? [tensor.shape[0]!, ...dims] : dims });
    } else {
      ordered.push(tensor);
    }
  }
  for (const tensor of outputs) if (!order.includes(tensor.name)) ordered.push(tensor);
  return ordered;
}

/** True when the outputs are exactly the configured ones, in config order, none reshaped: nothing to restore. */
function inConfigOrderAsIs(configs: ServedVersion["signature"]["outputs"], outputs: Tensor[]): boolean {
  if (outputs.length !== configs.length) return false;
  for (let i = 0; i < configs.length; i += 1) {
    const config = configs[i]!;
    if (config.reshape !== undefined || config.name !== outputs[i]!.name) return false;
  }
  return true;
}
