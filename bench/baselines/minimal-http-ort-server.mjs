#!/usr/bin/env node
// The baseline a user would write instead of Operon: one process, node:http,
// onnxruntime-node called directly on the request's event loop, speaking the
// same KServe v2 HTTP the benchmark sends Operon: JSON (`data` arrays), or
// the binary_tensor_data extension (Inference-Header-Content-Length: a JSON
// header, then each input's raw bytes; outputs answered the same way). No
// validation, no metrics, no isolation: the cheapest thing that works.
//
// usage: node minimal-http-ort-server.mjs <model.onnx> <port>
import { createServer } from "node:http";
import ort from "onnxruntime-node";

const [modelPath, portText = "0"] = process.argv.slice(2);
const session = await ort.InferenceSession.create(modelPath, { intraOpNumThreads: 1, interOpNumThreads: 1 });
const ORT_TYPE = { FP32: "float32", INT32: "int32", INT64: "int64", FP64: "float64" };
const ARRAY = { FP32: Float32Array, INT32: Int32Array, INT64: BigInt64Array, FP64: Float64Array };
const DATATYPE = { float32: "FP32", int32: "INT32", int64: "INT64", float64: "FP64" };

async function infer(body, headerLength) {
  const json = JSON.parse(headerLength === undefined ? body : body.subarray(0, headerLength));
  const feeds = {};
  let offset = headerLength ?? 0;
  for (const input of json.inputs) {
    let data;
    if (headerLength === undefined) data = ARRAY[input.datatype].from(input.data);
    else {
      const size = input.parameters.binary_data_size;
      const bytes = body.subarray(offset, offset + size);
      offset += size;
      data = new ARRAY[input.datatype](bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + size));
    }
    feeds[input.name] = new ort.Tensor(ORT_TYPE[input.datatype], data, input.shape);
  }
  const results = await session.run(feeds);
  return session.outputNames.map((name) => ({ name, tensor: results[name] }));
}

const server = createServer((request, response) => {
  const chunks = [];
  request.on("data", (chunk) => chunks.push(chunk));
  request.on("end", async () => {
    const body = Buffer.concat(chunks);
    const headerText = request.headers["inference-header-content-length"];
    const binary = headerText !== undefined;
    const outputs = await infer(body, binary ? Number(headerText) : undefined);
    const described = outputs.map(({ name, tensor }) => ({
      name,
      datatype: DATATYPE[tensor.type],
      shape: tensor.dims,
      ...(binary ? { parameters: { binary_data_size: tensor.data.byteLength } } : { data: Array.from(tensor.data) }),
    }));
    const header = JSON.stringify({ model_name: "model", outputs: described });
    if (!binary) {
      response.writeHead(200, { "content-type": "application/json" });
      response.end(header);
      return;
    }
    const raw = outputs.map(({ tensor }) =>
      Buffer.from(tensor.data.buffer, tensor.data.byteOffset, tensor.data.byteLength),
    );
    response.writeHead(200, {
      "content-type": "application/octet-stream",
      "inference-header-content-length": Buffer.byteLength(header),
    });
    response.end(Buffer.concat([Buffer.from(header), ...raw]));
  });
});
server.keepAliveTimeout = 65_000;
server.listen(Number(portText), "127.0.0.1", () => {
  process.stdout.write(`listening ${server.address().port}\n`);
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
