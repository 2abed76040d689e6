import type * as grpc from "@grpc/grpc-js";
import { OperonError } from "@operon/protocol/errors";
import type { InferenceEngine } from "../../engine/engine-api.js";
import type { Logger } from "@operon/protocol/logger";
import { unary } from "./grpc-calls.js";
import { INFERENCE_SERVICE } from "./grpc-wire.js";

type ServingStatus = "SERVING" | "NOT_SERVING" | "SERVICE_UNKNOWN";

async function servingStatus(engine: InferenceEngine, service: string): Promise<ServingStatus> {
  if (service === "" || service === INFERENCE_SERVICE) return engine.isReady() ? "SERVING" : "NOT_SERVING";
  if (engine.isModelReady(service)) return "SERVING";
  // Only a model that is not ready costs a repository read.
  const index = await engine.repositoryIndex({});
  return index.some((entry) => entry.name === service) ? "NOT_SERVING" : "SERVICE_UNKNOWN";
}

export function healthHandlers(
  engine: InferenceEngine,
  watches: Set<() => void>,
  intervalMs: number,
  logger?: Logger,
): grpc.UntypedServiceImplementation {
  const watch: grpc.handleServerStreamingCall<{ service: string }, object> = (call) => {
    let last: string | undefined;
    let checking = false;
    let done = false;
    const check = async () => {
      if (checking) return;
      checking = true;
      let status: string;
      try {
        status = await servingStatus(engine, call.request.service);
      } catch (error) {
        logger?.warn({ err: error }, "health watch check failed");
        status = "UNKNOWN";
      }
      checking = false;
      if (status !== last && !done) {
        last = status;
        call.write({ status });
      }
    };
    const timer = setInterval(() => void check(), intervalMs);
    const release = () => {
      done = true;
      clearInterval(timer);
      watches.delete(close);
    };
    const close = () => {
      const wasOpen = !done && !call.cancelled;
      release();
      if (wasOpen) call.end();
    };
    watches.add(close);
    call.on("cancelled", release);
    call.on("error", () => release());
    void check();
  };
  return {
    Check: unary(logger, async (r: { service: string }) => {
      const status = await servingStatus(engine, r.service);
      if (status === "SERVICE_UNKNOWN") throw new OperonError("NOT_FOUND", `unknown service or model '${r.service}'`);
      return { status };
    }),
    Watch: watch,
  };
}

// ---- Inference codec ----
