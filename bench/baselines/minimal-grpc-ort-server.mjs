#!/usr/bin/env node
// The gRPC baseline a user would write instead of Operon: one process,
// @grpc/grpc-js with the KServe v2 protos, onnxruntime-node called directly
// in the ModelInfer handler. Inputs from raw_input_contents (FP32), outputs
// as raw_output_contents. No validation, no metrics, no isolation.
//
// usage: node minimal-grpc-ort-server.mjs <model.onnx> <port>
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import ort from "onnxruntime-node";
import { PROTO_DIR } from "@operon/protocol/proto-dir";

const [modelPath, portText = "0"] = process.argv.slice(2);
const session = await ort.InferenceSession.create(modelPath, { intraOpNumThreads: 1, interOpNumThreads: 1 });
const definition = await protoLoader.load(["grpc_service.proto"], {
  keepCase: true,
  longs: Number,
  defaults: true,
  includeDirs: [PROTO_DIR],
});
const service = grpc.loadPackageDefinition(definition).inference.GRPCInferenceService.service;

const server = new grpc.Server({ "grpc.max_receive_message_length": 64 * 1024 * 1024 });
server.addService(service, {
  ModelInfer: async (call, callback) => {
    const request = call.request;
    const feeds = {};
    request.inputs.forEach((input, i) => {
      const raw = request.raw_input_contents[i];
      const data = new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength));
      feeds[input.name] = new ort.Tensor("float32", data, input.shape.map(Number));
    });
    const results = await session.run(feeds);
    const names = session.outputNames;
    callback(null, {
      model_name: request.model_name,
      model_version: "1",
      id: request.id,
      outputs: names.map((name) => ({ name, datatype: "FP32", shape: results[name].dims })),
      raw_output_contents: names.map((name) => {
        const data = results[name].data;
        return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
      }),
    });
  },
});
server.bindAsync(`127.0.0.1:${portText}`, grpc.ServerCredentials.createInsecure(), (error, port) => {
  if (error) throw error;
  process.stdout.write(`listening ${port}\n`);
});
process.on("SIGTERM", () => server.tryShutdown(() => process.exit(0)));
