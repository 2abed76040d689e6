#!/usr/bin/env node
// Writes an MLP weights file for operon_cuda (format: native/backends/operon_cuda/cuda-reference.h):
//   node examples/scripts/write-mlp-weights.mjs <out-file> [widths=784,2048,2048,10] [seed=1]
// Random weights, uniform in +-1/sqrt(fan_in) (a model to measure and test with).
import { writeFileSync } from "node:fs";

const [out, widthsText = "784,2048,2048,10", seedText = "1"] = process.argv.slice(2);
if (!out) {
  console.error("usage: write-mlp-weights.mjs <out-file> [widths=784,2048,2048,10] [seed=1]");
  process.exit(2);
}
const dims = widthsText.split(",").map(Number);
if (dims.length < 2 || dims.length > 17 || dims.some((d) => !Number.isInteger(d) || d < 1 || d > 65536)) {
  console.error(`widths must be 2 to 17 integers from 1 to 65536, got '${widthsText}'`);
  process.exit(2);
}
let state = BigInt(Number(seedText) >>> 0) * 6364136223846793005n + 1442695040888963407n;
const random = () => {
  state = (state * 6364136223846793005n + 1442695040888963407n) & 0xffffffffffffffffn;
  return Number(state >> 11n) / 9007199254740992;
};
let bytes = 8 + 4 + 4 * dims.length;
for (let l = 0; l + 1 < dims.length; l += 1) bytes += 4 * (dims[l + 1] * dims[l] + dims[l + 1]);
const buffer = Buffer.alloc(bytes);
buffer.write("OPMLPW01", 0, "latin1");
buffer.writeUInt32LE(dims.length - 1, 8);
dims.forEach((d, i) => buffer.writeUInt32LE(d, 12 + 4 * i));
let offset = 12 + 4 * dims.length;
for (let l = 0; l + 1 < dims.length; l += 1) {
  const bound = 1 / Math.sqrt(dims[l]);
  for (let i = 0; i < dims[l + 1] * dims[l] + dims[l + 1]; i += 1, offset += 4) buffer.writeFloatLE((2 * random() - 1) * bound, offset);
}
writeFileSync(out, buffer);
console.log(`wrote ${out}: MLP ${dims.join("-")}, ${bytes} bytes`);
