#!/usr/bin/env node
// Writes the small example models that Operon ships in examples/model_repository
// and examples/ensemble_repository.
// Run after `npm run build`: node examples/generate-models.mjs
// The files are committed; a test checks that this script still writes the same bytes.
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { writeAddSubModel, writeIdentityModel, writeOnnxModel } from "@operon/testing/onnx-model-writer";

const examples = dirname(fileURLToPath(import.meta.url));
const repository = join(examples, "model_repository");
const ensembleRepository = join(examples, "ensemble_repository");

export const EXAMPLE_MODELS = {
  "add_sub/1/model.onnx": () => writeAddSubModel({ datatype: "FP32", shape: [-1, 16] }),
  "identity_bytes/1/model.onnx": () =>
    writeIdentityModel({ datatype: "BYTES", shape: [-1, -1], inputName: "INPUT0", outputName: "OUTPUT0" }),
};

/** `preprocess` of the ensemble example: OUTPUT0 = INPUT0 * 2 (the factor is an initializer), FP32 [N, 16]. */
export function writePreprocessModel() {
  const value = (name) => ({ name, datatype: "FP32", shape: ["batch", 16] });
  return writeOnnxModel({
    name: "preprocess",
    inputs: [value("INPUT0")],
    outputs: [value("OUTPUT0")],
    nodes: [{ opType: "Mul", inputs: ["INPUT0", "scale"], outputs: ["OUTPUT0"], name: "scale" }],
    initializers: [{ name: "scale", datatype: "FP32", dims: [1], data: Buffer.from(Float32Array.of(2).buffer) }],
  });
}

/** The Triton-format ensemble example: two preprocess steps in parallel, then add_sub. */
export const ENSEMBLE_EXAMPLE_MODELS = {
  "preprocess/1/model.onnx": writePreprocessModel,
  "add_sub/1/model.onnx": () => writeAddSubModel({ datatype: "FP32", shape: [-1, 16] }),
};

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const [root, models] of [
    [repository, EXAMPLE_MODELS],
    [ensembleRepository, ENSEMBLE_EXAMPLE_MODELS],
  ]) {
    for (const [path, write] of Object.entries(models)) {
      const target = join(root, path);
      mkdirSync(dirname(target), { recursive: true });
      writeFileSync(target, write());
      console.log(`wrote ${join(root.slice(examples.length + 1), path)}`);
    }
  }
}
