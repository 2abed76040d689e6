import { parentPort } from "node:worker_threads";
import * as grpc from "@grpc/grpc-js";
import { asOperonError } from "@operon/protocol/errors";
import { INFERENCE_SERVICE, loadGrpcProtos, type WireInferRequest } from "../grpc/grpc-wire.js";
import { type DecodeTask, decodeGrpcInfer, decodeHttpInfer, decodeJson } from "./decode-tasks.js";
import { packInferRequest } from "./packed-request.js";
import type { DecodeReply } from "./decode-pool.js";

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

const view = (bytes: Uint8Array): Buffer => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);

port.on("message", async ({ id, task }: { id: number; task: DecodeTask }) => {
  let reply: DecodeReply;
  let transfer: ArrayBuffer[] = [];
  try {
    switch (task.kind) {
      case "http-infer": {
        const decoded = decodeHttpInfer(view(task.body), task.headerLength, task.target);
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
        reply = { id, ok: true, result: { kind: "json", value: decodeJson(view(task.body)) } };
        break;
    }
  } catch (error) {
    const failure = asOperonError(error);
    reply = { id, ok: false, kind: failure.kind, message: failure.message };
  }
  port.postMessage(reply, transfer);
});
