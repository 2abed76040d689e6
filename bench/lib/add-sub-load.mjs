// The add_sub FP32 [1,16] model and its request, as the request-path tools
// (cpu-per-request.mjs, profile-request-path.mjs, profile-stalls.mjs) serve
// and send it: one repository, one body, so their figures compare.
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writeAddSubModel } from "@operon/testing/onnx-model-writer";

/**
 * A model repository with add_sub (2 instances by default, a 100 µs queue
 * delay; `queueDelayUs` another, 0 for none; `queueDelayUs: null`: no dynamic_batching at all, Triton's default
 * scheduler, as run-bench's add_sub_nodelay); `isolation` sets operon_isolation when given. Returns the
 * repository and its model file (for the minimal servers).
 */
export function writeAddSubRepository({
  isolation = "",
  instances = 2,
  prefix = "operon-add-sub-",
  queueDelayUs = Number(process.env.QUEUE_DELAY_US ?? 100),
} = {}) {
  const repository = mkdtempSync(join(tmpdir(), prefix));
  mkdirSync(join(repository, "add_sub", "1"), { recursive: true });
  const onnx = join(repository, "add_sub", "1", "model.onnx");
  writeFileSync(onnx, writeAddSubModel({ datatype: "FP32", shape: [-1, 16] }));
  const parameters = isolation
    ? `\nparameters { key: "operon_isolation" value: { string_value: "${isolation}" } }`
    : "";
  writeFileSync(
    join(repository, "add_sub", "config.pbtxt"),
    `name: "add_sub"\nbackend: "onnxruntime"\nmax_batch_size: 8\ninstance_group [ { count: ${instances} } ]${queueDelayUs === null ? "" : `\ndynamic_batching { max_queue_delay_microseconds: ${queueDelayUs} }`}${parameters}`,
  );
  return { repository, onnx };
}

/** The add_sub request body and headers: KServe JSON ("json") or JSON + binary data in and out ("binary"). */
export function addSubRequest(kind) {
  const data = Array.from({ length: 16 }, (_, i) => 1 + (i % 7) / 8);
  if (kind === "binary") {
    const header = Buffer.from(
      JSON.stringify({
        inputs: ["INPUT0", "INPUT1"].map((name) => ({
          name,
          datatype: "FP32",
          shape: [1, 16],
          parameters: { binary_data_size: 64 },
        })),
        parameters: { binary_data_output: true },
      }),
    );
    const raw = Buffer.from(new Float32Array(data).buffer);
    return {
      body: Buffer.concat([header, raw, raw]),
      headers: { "content-type": "application/octet-stream", "inference-header-content-length": String(header.length) },
    };
  }
  return {
    body: JSON.stringify({
      inputs: ["INPUT0", "INPUT1"].map((name) => ({ name, datatype: "FP32", shape: [1, 16], data })),
    }),
    headers: { "content-type": "application/json" },
  };
}
