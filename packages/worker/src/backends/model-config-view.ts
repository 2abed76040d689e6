import { fromConfigDataType } from "@operon/protocol/datatypes";
import type { IoInfo } from "@operon/protocol/worker-wire";

/**
 * Reads the parts of a model config (Triton's JSON, snake_case, as the
 * load message carries it) that a backend without a model-file schema
 * needs: its declared inputs and outputs, parameters, batching and
 * decoupled flags. Lenient: anything malformed reads as absent (the
 * gateway validated the config before any worker saw it).
 */

export interface ConfigIo {
  inputs: IoInfo[];
  outputs: IoInfo[];
}

/** Declared `input` / `output`; with max_batch_size > 0 a leading -1 batch dimension, as ONNX models report theirs. */
export function configIo(config: Record<string, unknown>): ConfigIo {
  const batching = maxBatchSizeOf(config) > 0;
  return { inputs: ioListOf(config.input, batching), outputs: ioListOf(config.output, batching) };
}

export function maxBatchSizeOf(config: Record<string, unknown>): number {
  const value = config.max_batch_size;
  return typeof value === "number" && Number.isSafeInteger(value) && value > 0 ? value : 0;
}

/** `model_transaction_policy { decoupled: true }`. */
export function isDecoupled(config: Record<string, unknown>): boolean {
  const policy = config.model_transaction_policy as { decoupled?: unknown } | undefined;
  return policy?.decoupled === true;
}

/** Config `parameters: {key: {string_value}}` as strings, overridden by the load message's parameters. */
export function parametersOf(
  config: Record<string, unknown>,
  loadParameters: Record<string, string>,
): Record<string, string> {
  const out: Record<string, string> = {};
  const parameters = config.parameters as Record<string, { string_value?: unknown } | undefined> | undefined;
  if (typeof parameters === "object" && parameters !== null) {
    for (const [key, value] of Object.entries(parameters)) {
      if (typeof value?.string_value === "string") out[key] = value.string_value;
    }
  }
  return { ...out, ...loadParameters };
}

/** The first instance group's kind, KIND_CPU when none is given. */
export function instanceKindOf(config: Record<string, unknown>): string {
  const groups = config.instance_group;
  const kind = Array.isArray(groups) ? (groups[0] as { kind?: unknown } | undefined)?.kind : undefined;
  return typeof kind === "string" && kind !== "KIND_AUTO" ? kind : "KIND_CPU";
}

function ioListOf(value: unknown, batching: boolean): IoInfo[] {
  if (!Array.isArray(value)) return [];
  return value.flatMap(
    (entry: { name?: unknown; data_type?: unknown; dims?: unknown; reshape?: { shape?: unknown } }) => {
      if (typeof entry?.name !== "string") return [];
      const datatype = typeof entry.data_type === "string" ? fromConfigDataType(entry.data_type) : undefined;
      const declared = Array.isArray(entry.reshape?.shape) ? entry.reshape.shape : entry.dims;
      const dims = Array.isArray(declared)
        ? declared.map((dim) => (typeof dim === "number" && dim >= 0 ? dim : -1))
        : [];
      return [{ name: entry.name, datatype, shape: batching ? [-1, ...dims] : dims }];
    },
  );
}
