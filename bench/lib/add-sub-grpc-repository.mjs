// The repository the gRPC request-path tools serve: add_sub as section 1 of
// run-bench.mjs configures it at concurrency 16 (dynamic batching, 100 µs
// queue delay, 2 instances) and at concurrency 1 (add_sub_nodelay: one
// instance, no batcher), both placed by --backend-isolation auto.
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writeAddSubModel } from "@operon/testing/onnx-model-writer";

/** Returns the repository and add_sub's model file (for the minimal gRPC server). */
export function writeAddSubGrpcRepository(prefix = "operon-grpc-add-sub-") {
  const repository = mkdtempSync(join(tmpdir(), prefix));
  const model = (name, config) => {
    mkdirSync(join(repository, name, "1"), { recursive: true });
    const onnx = join(repository, name, "1", "model.onnx");
    writeFileSync(onnx, writeAddSubModel({ datatype: "FP32", shape: [-1, 16] }));
    writeFileSync(join(repository, name, "config.pbtxt"), `name: "${name}"\nbackend: "onnxruntime"\n${config}`);
    return onnx;
  };
  const onnx = model(
    "add_sub",
    "max_batch_size: 8\ninstance_group [ { count: 2 } ]\ndynamic_batching { max_queue_delay_microseconds: 100 }",
  );
  model("add_sub_nodelay", "max_batch_size: 8\ninstance_group [ { count: 1 } ]");
  return { repository, onnx };
}
