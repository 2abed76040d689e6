import { fromConfigDataType } from "@operon/protocol/datatypes";
import { OperonError } from "@operon/protocol/errors";
import type { Tensor } from "@operon/protocol/tensor";
import type { IoInfo } from "@operon/protocol/worker-wire";
import { BACKEND_API_VERSION } from "@operon/backend-api/backend-api-version";
import {
  type Backend,
  type BackendExecuteResult,
  type BackendInitOptions,
  type BackendMetadata,
} from "@operon/backend-api/backend";

/**
 * Returns its inputs as its outputs, bytes untouched: the transport between
 * gateway and worker can be measured and tested without a runtime's own
 * copies. No model file is read.
 *
 * Output names: parameter "output_names" (load or config parameters), a
 * comma-separated list; the i-th input comes back under the i-th name, or
 * under its own name where the list is shorter. Metadata comes from the
 * config's `input` / `output` lists when it has them (for display only:
 * execute accepts any tensors).
 *
 * The outputs are the very input Buffers. Inputs may be views into shared
 * memory that the gateway reuses once the reply is sent; the worker copies
 * outputs into its own half, or onto the socket, before replying, so that
 * is safe here, and a backend must never keep input views past execute().
 */
export class EchoBackend implements Backend {
  readonly apiVersion = BACKEND_API_VERSION;
  private outputNames: string[] = [];
  private info: BackendMetadata = { inputs: [], outputs: [] };
  private loaded = false;

  async initialize(options: BackendInitOptions): Promise<void> {
    if (options.instanceKind === "KIND_GPU") {
      throw new OperonError(
        "INVALID_ARG",
        `echo backend: instance '${options.instanceName}' is KIND_GPU, but this backend runs on the CPU only; use kind KIND_CPU`,
      );
    }
    const names = parameterOf(options, "output_names");
    this.outputNames = names === undefined ? [] : names.split(",").map((name) => name.trim());
    if (this.outputNames.some((name) => name === "")) {
      throw new OperonError("INVALID_ARG", `echo backend: parameter 'output_names' has an empty name: '${names}'`);
    }
    this.info = { inputs: ioListOf(options.config.input), outputs: ioListOf(options.config.output) };
    this.loaded = true;
  }

  metadata(): BackendMetadata {
    return this.info;
  }

  async execute(inputs: Tensor[], outputNames?: string[]): Promise<BackendExecuteResult> {
    if (!this.loaded) throw new OperonError("UNAVAILABLE", "echo backend: not initialized");
    const started = process.hrtime.bigint();
    let outputs = inputs.map((input, i): Tensor => ({ ...input, name: this.outputNames[i] ?? input.name }));
    if (outputNames !== undefined && outputNames.length > 0) {
      const byName = new Map(outputs.map((output) => [output.name, output]));
      outputs = [...new Set(outputNames)].map((name) => {
        const output = byName.get(name);
        if (output === undefined) {
          throw new OperonError(
            "INVALID_ARG",
            `unexpected inference output '${name}', this request's outputs are: ${[...byName.keys()].join(", ")}`,
          );
        }
        return output;
      });
    }
    const inferNs = Number(process.hrtime.bigint() - started);
    return { outputs, timing: { computeInputNs: 0, computeInferNs: inferNs, computeOutputNs: 0 } };
  }

  async finalize(): Promise<void> {
    this.loaded = false;
  }
}

/** Triton config `parameters: {key: {string_value}}`, overridden by load parameters. */
function parameterOf(options: BackendInitOptions, key: string): string | undefined {
  const fromLoad = options.parameters[key];
  if (fromLoad !== undefined) return fromLoad;
  const parameters = options.config.parameters as Record<string, { string_value?: unknown } | undefined> | undefined;
  const value = parameters?.[key]?.string_value;
  return typeof value === "string" ? value : undefined;
}

/** Config `input` / `output` entries ({name, data_type: "TYPE_FP32", dims}) as IoInfo. */
function ioListOf(value: unknown): IoInfo[] {
  if (!Array.isArray(value)) return [];
  return value.flatMap((entry: { name?: unknown; data_type?: unknown; dims?: unknown }) => {
    if (typeof entry?.name !== "string") return [];
    const datatype = typeof entry.data_type === "string" ? fromConfigDataType(entry.data_type) : undefined;
    const shape = Array.isArray(entry.dims)
      ? entry.dims.map((dim) => (typeof dim === "number" && dim >= 0 ? dim : -1))
      : [];
    return [{ name: entry.name, datatype, shape }];
  });
}

/** Used by the worker's backend registry. */
export function createEchoBackend(): Backend {
  return new EchoBackend();
}
