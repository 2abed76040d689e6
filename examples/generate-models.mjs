#!/usr/bin/env node
// Writes the small example models that Operon ships in examples/model_repository.
// Run after `npm run build`: node examples/generate-models.mjs
// The files are committed; a test checks that this script still writes the same bytes.
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { writeAddSubModel, writeIdentityModel } from "@operon/worker/testing/onnx-model-writer";

const repository = join(dirname(fileURLToPath(import.meta.url)), "model_repository");

export const EXAMPLE_MODELS = {
  "add_sub/1/model.onnx": () => writeAddSubModel({ datatype: "FP32", shape: [-1, 16] }),
  "identity_bytes/1/model.onnx": () =>
    writeIdentityModel({ datatype: "BYTES", shape: [-1, -1], inputName: "INPUT0", outputName: "OUTPUT0" }),
};

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const [path, write] of Object.entries(EXAMPLE_MODELS)) {
    const target = join(repository, path);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, write());
    console.log(`wrote ${path}`);
  }
}
