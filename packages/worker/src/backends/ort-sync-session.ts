import { createRequire } from "node:module";
import ort from "onnxruntime-node";

/**
 * An ONNX Runtime CPU session run synchronously, without onnxruntime-node's
 * promise wrapper.
 *
 * Why: the public `InferenceSession.run` checks its arguments again, defers
 * the native call to a `setImmediate` (one more turn of the calling thread's
 * event loop, with its I/O poll) and wraps the results once more. For a small
 * model that wrapper is most of the run: add_sub with a batch of 6 measured
 * 62–77 µs through `await session.run` against 29–42 µs for the same native
 * call made directly (20,000 runs each, side by side, loaded 2-core host).
 * An instance thread and an inline instance pay it on every execution, on
 * the request's critical path.
 *
 * The contract used here is onnxruntime-node's own binding, the one its
 * public session wraps (dist/binding.js, pinned at 1.30.0 by the workspace):
 * `new InferenceSession()`, `loadModel(path, options)`, `inputMetadata`,
 * `outputMetadata`, `run(feeds, fetches, options)` returning ort.Tensor
 * values, `dispose()`. openSyncSession checks that shape before use and
 * returns undefined when it differs, so an upgrade that changes it falls
 * back to the public API instead of failing.
 */
export interface SyncSession {
  readonly inputMetadata: readonly ort.InferenceSession.ValueMetadata[];
  readonly outputMetadata: readonly ort.InferenceSession.ValueMetadata[];
  readonly outputNames: readonly string[];
  /** fetches: the outputs to compute, as `{ name: null }` (all of them when undefined). */
  run(feeds: Record<string, ort.Tensor>, fetches: readonly string[] | undefined): Record<string, ort.Tensor>;
  release(): void;
}

interface RawValueMetadata {
  name: string;
  isTensor: boolean;
  /** ONNX TensorProto.DataType. */
  type: number;
  shape: number[];
  symbolicDimensions: string[];
}

interface NativeSession {
  loadModel(path: string, options: ort.InferenceSession.SessionOptions): void;
  readonly inputMetadata: RawValueMetadata[];
  readonly outputMetadata: RawValueMetadata[];
  run(
    feeds: Record<string, ort.Tensor>,
    fetches: Record<string, null>,
    options: ort.InferenceSession.RunOptions,
  ): Record<string, ort.Tensor>;
  dispose(): void;
}

interface NativeBinding {
  binding: { InferenceSession: new () => NativeSession };
  initOrt(): void;
}

/** ONNX TensorProto.DataType numbers → onnxruntime-node's type names (those it can hand to JS). */
const ONNX_TYPE_NAMES: Readonly<Record<number, ort.Tensor.Type>> = {
  1: "float32",
  2: "uint8",
  3: "int8",
  4: "uint16",
  5: "int16",
  6: "int32",
  7: "int64",
  8: "string",
  9: "bool",
  10: "float16",
  11: "float64",
  12: "uint32",
  13: "uint64",
};

/** Every run's options: the failure comes back to the caller; ORT need not also print it to stderr. */
export const QUIET_RUN_OPTIONS: ort.InferenceSession.RunOptions = { logSeverityLevel: 4 };

let nativeBinding: NativeBinding | null | undefined;

/** True when `module` is the binding this file was written against (see the contract above). */
export function isKnownBinding(module: unknown): module is NativeBinding {
  const candidate = module as Partial<NativeBinding> | undefined;
  const proto = candidate?.binding?.InferenceSession?.prototype as Partial<NativeSession> | undefined;
  return (
    typeof candidate?.initOrt === "function" &&
    typeof proto?.loadModel === "function" &&
    typeof proto.run === "function" &&
    typeof proto.dispose === "function"
  );
}

function loadBinding(): NativeBinding | null {
  if (nativeBinding !== undefined) return nativeBinding;
  nativeBinding = null;
  try {
    const required: unknown = createRequire(import.meta.url)("onnxruntime-node/dist/binding.js");
    if (isKnownBinding(required)) {
      // The public API's first session does this too (log level from ort.env, the Tensor class results are made of).
      required.initOrt();
      nativeBinding = required;
    }
  } catch {
    // Not this binding: the public API serves.
  }
  return nativeBinding;
}

/**
 * Opens the model as a synchronous session, or returns undefined when this
 * onnxruntime-node's binding is not the one described above. Load failures
 * (a bad model file, bad options) throw, as InferenceSession.create's do.
 */
export function openSyncSession(
  modelPath: string,
  options: ort.InferenceSession.SessionOptions,
): SyncSession | undefined {
  const loaded = loadBinding();
  if (loaded === null) return undefined;
  const native = new loaded.binding.InferenceSession();
  native.loadModel(modelPath, options);
  const inputMetadata = native.inputMetadata.map(valueMetadataOf);
  const outputMetadata = native.outputMetadata.map(valueMetadataOf);
  const outputNames = outputMetadata.map((value) => value.name);
  const allOutputs: Record<string, null> = {};
  for (const name of outputNames) allOutputs[name] = null;
  return {
    inputMetadata,
    outputMetadata,
    outputNames,
    run(feeds, fetches) {
      let wanted = allOutputs;
      if (fetches !== undefined) {
        wanted = {};
        for (const name of fetches) wanted[name] = null;
      }
      return native.run(feeds, wanted, QUIET_RUN_OPTIONS);
    },
    release: () => native.dispose(),
  };
}

/** The binding's raw metadata as the public API reports it (symbolic dimensions as their names). */
function valueMetadataOf(raw: RawValueMetadata): ort.InferenceSession.ValueMetadata {
  if (!raw.isTensor) return { name: raw.name, isTensor: false };
  const type = ONNX_TYPE_NAMES[raw.type];
  if (type === undefined)
    throw new Error(`'${raw.name}' has ONNX data type ${raw.type}, which onnxruntime-node cannot read`);
  const shape = raw.shape.map((dim, i) => (dim >= 0 ? dim : (raw.symbolicDimensions[i] ?? "")));
  return { name: raw.name, isTensor: true, type, shape };
}
