import { createHash } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writeMlpModel } from "@operon/testing/onnx-model-writer";

/**
 * A small real ONNX model on disk for upload tests: an MLP `input` FP32
 * [batch, 4] → `output` FP32 [batch, 2], and its SHA-256.
 */
export function writeTinyMlpFile(fileName = "tiny-mlp.onnx"): { path: string; sha256: string; sizeBytes: number } {
  const bytes = writeMlpModel({ sizes: [4, 8, 2], seed: 7 });
  const path = join(mkdtempSync(join(tmpdir(), "operon-e2e-upload-")), fileName);
  writeFileSync(path, bytes);
  return { path, sha256: createHash("sha256").update(bytes).digest("hex"), sizeBytes: bytes.length };
}
