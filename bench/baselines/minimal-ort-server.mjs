#!/usr/bin/env node
// The baseline a user would write instead of Operon: one process, node:http,
// onnxruntime-node called directly on the request's event loop. The body is
// the raw little-endian bytes of each input, concatenated in model order;
// the response is the raw bytes of each output. No validation, no metrics,
// no isolation — the cheapest thing that works.
//
// usage: node minimal-ort-server.mjs <model.onnx> <port> <input shape, e.g. 1,16>
import { createServer } from "node:http";
import ort from "onnxruntime-node";

const [modelPath, portText = "0", shapeText = "1,16"] = process.argv.slice(2);
const shape = shapeText.split(",").map(Number);
const elements = shape.reduce((a, b) => a * b, 1);
const session = await ort.InferenceSession.create(modelPath, { intraOpNumThreads: 1, interOpNumThreads: 1 });

const server = createServer((request, response) => {
  const chunks = [];
  request.on("data", (chunk) => chunks.push(chunk));
  request.on("end", async () => {
    const body = Buffer.concat(chunks);
    const floats = new Float32Array(body.buffer, body.byteOffset, body.byteLength / 4);
    const feeds = {};
    session.inputNames.forEach((name, index) => {
      feeds[name] = new ort.Tensor("float32", floats.subarray(index * elements, (index + 1) * elements), shape);
    });
    const results = await session.run(feeds);
    const out = session.outputNames.map((name) => {
      const data = results[name].data;
      return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    });
    response.writeHead(200, { "content-type": "application/octet-stream" });
    response.end(Buffer.concat(out));
  });
});
server.keepAliveTimeout = 65_000;
server.listen(Number(portText), "127.0.0.1", () => {
  process.stdout.write(`listening ${server.address().port}\n`);
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
