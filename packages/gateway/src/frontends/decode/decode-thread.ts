import { parentPort, workerData } from "node:worker_threads";
import * as grpc from "@grpc/grpc-js";
import { asOperonError } from "@operon/protocol/errors";
import { INFERENCE_SERVICE, loadGrpcProtos, type WireInferRequest } from "../grpc/grpc-wire.js";
import { type DecodeTask, decodeGrpcInfer, decodeHttpInfer, decodeJson } from "./decode-tasks.js";
import { packInferRequest } from "./packed-request.js";
import type { DecodeReply, DecodeThreadReady } from "./decode-pool.js";
import { DEFAULT_JSON_BUDGET, HEAP_SHARE, type JsonBudget } from "../http/json-budget.js";

/** A thread of the decode pool (decode-pool.ts): runs one task at a time, answers with its result or its error. */
const port = parentPort;
if (port === null) throw new Error("decode-thread.js runs as a worker_thread of the gateway");

let grpcDeserialize: Promise<(message: Buffer) => WireInferRequest> | undefined;
function deserializer(): Promise<(message: Buffer) => WireInferRequest> {
  grpcDeserialize ??= loadGrpcProtos().then((definition) => {
    const service = definition[INFERENCE_SERVICE] as unknown as grpc.ServiceDefinition;
    const method = service["ModelInfer"]!;
    return (message: Buffer) => method.requestDeserialize(message) as WireInferRequest;
  });
  return grpcDeserialize;
}

// A body whose parse cannot fit this thread's heap is refused before parsing (JsonBudget.maxHeapBytes says why).
const maxHeapMb = (workerData as { maxHeapMb?: number } | null)?.maxHeapMb;
const budget: JsonBudget =
  maxHeapMb === undefined
    ? DEFAULT_JSON_BUDGET
    : { ...DEFAULT_JSON_BUDGET, maxHeapBytes: maxHeapMb * 1024 * 1024 * HEAP_SHARE };

const view = (bytes: Uint8Array): Buffer => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);

port.on("message", async ({ id, task }: { id: number; task: DecodeTask }) => {
  let reply: DecodeReply;
  let transfer: ArrayBuffer[] = [];
  try {
    switch (task.kind) {
      case "http-infer": {
        const decoded = decodeHttpInfer(view(task.body), task.headerLength, task.target, budget);
        const packed = packInferRequest(decoded.request);
        reply = { id, ok: true, result: { kind: "infer", packed, binaryDataOutput: decoded.binaryDataOutput } };
        transfer = [packed.buffer];
        break;
      }
      case "grpc-infer": {
        const packed = packInferRequest(decodeGrpcInfer(view(task.message), await deserializer(), task.allowReserved));
        reply = { id, ok: true, result: { kind: "infer", packed, binaryDataOutput: false } };
        transfer = [packed.buffer];
        break;
      }
      case "json":
        reply = { id, ok: true, result: { kind: "json", value: decodeJson(view(task.body), budget) } };
        break;
    }
  } catch (error) {
    const failure = asOperonError(error);
    reply = { id, ok: false, kind: failure.kind, message: failure.message };
  }
  port.postMessage(reply, transfer);
});

// Loaded: the pool starts the clock of the body it gave this thread from now (decode-pool.ts, DecodeThreadReady).
port.postMessage({ ready: true } satisfies DecodeThreadReady);
