#!/usr/bin/env node
// Classifies the text direction of PNG images with the `text_direction`
// ensemble of a running Operon (or Triton) server, and prints one line per
// image: `<label> <score>` (prefixed with the file name when there are several).
//
//   npm start                                   # in one terminal
//   node examples/images/classify.mjs examples/images/text_0.png
//   node examples/images/classify.mjs --url http://127.0.0.1:8000 examples/images/*.png
//
// KServe's JSON format carries BYTES elements as strings, which a PNG is not,
// so the images travel with Triton's binary_tensor_data extension: a JSON
// header, then the BYTES tensor's raw bytes (each element: a 4-byte
// little-endian length, then the file). All the images go in one request, as
// one batch of shape [n, 1] (the ensemble's max_batch_size is 8); the
// outputs come back as plain JSON.
import { readFileSync } from "node:fs";
import { basename } from "node:path";

const args = process.argv.slice(2);
let url = "http://127.0.0.1:8000";
let model = "text_direction";
const files = [];
for (let i = 0; i < args.length; i += 1) {
  if (args[i] === "--url") url = args[++i];
  else if (args[i] === "--model") model = args[++i];
  else files.push(args[i]);
}
if (files.length === 0 || url === undefined || model === undefined) {
  console.error("usage: node examples/images/classify.mjs [--url http://127.0.0.1:8000] [--model text_direction] image.png [more.png ...]");
  process.exit(2);
}

const tensor = Buffer.concat(
  files.flatMap((file) => {
    const bytes = readFileSync(file);
    const length = Buffer.alloc(4);
    length.writeUInt32LE(bytes.length);
    return [length, bytes];
  }),
);
const header = Buffer.from(
  JSON.stringify({
    inputs: [{ name: "image", datatype: "BYTES", shape: [files.length, 1], parameters: { binary_data_size: tensor.length } }],
    outputs: [{ name: "label" }, { name: "score" }],
  }),
);
const response = await fetch(`${url.replace(/\/$/, "")}/v2/models/${encodeURIComponent(model)}/infer`, {
  method: "POST",
  headers: { "content-type": "application/octet-stream", "inference-header-content-length": String(header.length) },
  body: Buffer.concat([header, tensor]),
});
const body = await response.json();
if (response.status !== 200) {
  console.error(`error ${response.status}: ${body.error}`);
  process.exit(1);
}
const output = (name) => body.outputs.find((o) => o.name === name).data;
const labels = output("label");
const scores = output("score");
files.forEach((file, i) => {
  const line = `${labels[i]} ${scores[i].toFixed(4)}`;
  console.log(files.length > 1 ? `${basename(file)}: ${line}` : line);
});
