#!/usr/bin/env node
// The I/O ceiling: node:http that decodes a KServe v2 JSON infer request
// (JSON.parse, each input's data into a Float32Array) and answers a
// same-size KServe v2 JSON response (`outputElements` FP32 values), with no
// inference: what the network and parsing alone allow on this machine.
//
// usage: node io-ceiling-server.mjs <port> <output elements>
import { createServer } from "node:http";

const [portText = "0", outputText = "10"] = process.argv.slice(2);
const outputElements = Number(outputText);

const server = createServer((request, response) => {
  const chunks = [];
  request.on("data", (chunk) => chunks.push(chunk));
  request.on("end", () => {
    const json = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    let sum = 0;
    for (const input of json.inputs) sum += Float32Array.from(input.data)[0];
    const data = Array.from(new Float32Array(outputElements).fill(sum));
    const body = JSON.stringify({
      model_name: "model",
      model_version: "1",
      outputs: [{ name: "output", datatype: "FP32", shape: [1, outputElements], data }],
    });
    response.writeHead(200, { "content-type": "application/json" });
    response.end(body);
  });
});
server.keepAliveTimeout = 65_000;
server.listen(Number(portText), "127.0.0.1", () => process.stdout.write(`listening ${server.address().port}\n`));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
