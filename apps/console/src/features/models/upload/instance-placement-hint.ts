import type { ConfigDraft } from "./config-draft";

/** Backends whose instances may run inside the gateway process (the gateway's THREAD_CAPABLE_BACKENDS). */
const IN_GATEWAY_BACKENDS = new Set(["onnxruntime", "echo"]);

/**
 * What the upload form says about where the model's instances will run: the draft's own
 * `operon_isolation` parameter, else the gateway's --backend-isolation (`defaultIsolation`,
 * null while unknown), as the gateway decides it (instance-launch.ts isolationOf). User code
 * always runs in worker processes. Never claims a place it does not know (issue 27, item 7).
 */
export function instancePlacementHint(
  draft: ConfigDraft,
  defaultIsolation: "auto" | "thread" | "process" | null,
): string {
  const workers = "The Workers page shows where each one runs.";
  const backend = typeof draft["backend"] === "string" ? draft["backend"] : "onnxruntime";
  if (!IN_GATEWAY_BACKENDS.has(backend)) {
    return `Each instance is a worker process of its own (backend '${backend}' runs user code, which always runs in one). ${workers}`;
  }
  const asked = isolationParameterOf(draft);
  const isolation = asked ?? defaultIsolation;
  const why = asked !== undefined ? "this config's operon_isolation" : `this server's --backend-isolation ${isolation}`;
  switch (isolation) {
    case "auto":
      return `Each instance runs on the gateway's event loop if the model proves tiny (its largest batch runs in under 250 µs), else on a thread of the gateway process (${why}). ${workers}`;
    case "thread":
      return `Each instance is an ONNX Runtime session on a thread of the gateway process (${why}). ${workers}`;
    case "process":
      return `Each instance is an ONNX Runtime session in a worker process of its own (${why}). ${workers}`;
    case "inline":
      return `Each instance runs on the gateway's event loop itself (${why}): only for models that run in microseconds. ${workers}`;
    default:
      return workers;
  }
}

function isolationParameterOf(draft: ConfigDraft): string | undefined {
  const parameters = draft["parameters"];
  if (typeof parameters !== "object" || parameters === null) return undefined;
  const entry = (parameters as Record<string, unknown>)["operon_isolation"];
  if (typeof entry !== "object" || entry === null) return undefined;
  const value = (entry as { string_value?: unknown }).string_value;
  return typeof value === "string" && value !== "" ? value : undefined;
}
