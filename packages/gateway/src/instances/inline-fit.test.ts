import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writeAddSubModel, writeMlpModel, writeOnnxModel } from "@operon/testing/onnx-model-writer";
import { describe, expect, it } from "vitest";
import { inlineCandidacy, INLINE_MAX_BATCH_BYTES, measureExecutions, probeInputs } from "./inline-fit.js";

const CPU = { name: "m_0_0", kind: "KIND_CPU" as const, device: null };
const dir = mkdtempSync(join(tmpdir(), "operon-inline-fit-"));
const file = (name: string, bytes: Buffer): string => {
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return path;
};

describe("inlineCandidacy", () => {
  const addSub = file("add_sub.onnx", writeAddSubModel({ datatype: "FP32", shape: [-1, 16] }));

  it("takes a small ONNX Runtime model on the CPU whose operators the shapes bound", async () => {
    expect(await inlineCandidacy("onnxruntime", addSub, CPU)).toBeUndefined();
    const mlp = file("mlp.onnx", writeMlpModel({ sizes: [16, 8, 4] }));
    expect(await inlineCandidacy("onnxruntime", mlp, CPU)).toBeUndefined();
  });

  it("refuses other backends and GPU instances", async () => {
    expect(await inlineCandidacy("echo", addSub, CPU)).toBe(
      "backend 'echo' (only ONNX Runtime models run inline unasked)",
    );
    expect(await inlineCandidacy("onnxruntime", addSub, { name: "m_0_0", kind: "KIND_GPU", device: 0 })).toBe(
      "the instance is KIND_GPU",
    );
  });

  it("refuses a model file over a megabyte, and one it cannot read", async () => {
    const big = file("big.onnx", writeMlpModel({ sizes: [784, 512, 10] }));
    expect(await inlineCandidacy("onnxruntime", big, CPU)).toMatch(/^its model file is \d+ bytes \(over 1048576\)$/);
    expect(await inlineCandidacy("onnxruntime", join(dir, "missing.onnx"), CPU)).toMatch(/cannot be read/);
    const text = file("text.onnx", Buffer.from("name: 'not a model'"));
    expect(await inlineCandidacy("onnxruntime", text, CPU)).toMatch(/^its graph cannot be read/);
  });

  it("refuses operators whose cost the values decide, naming them", async () => {
    const value = (name: string) => ({ name, datatype: "INT64" as const, shape: [1] });
    const ranged = file(
      "range.onnx",
      writeOnnxModel({
        inputs: [value("start"), value("limit"), value("delta")],
        outputs: [{ name: "out", datatype: "INT64", shape: [-1] }],
        nodes: [{ opType: "Range", inputs: ["start", "limit", "delta"], outputs: ["out"] }],
        opsetVersion: 13,
      }),
    );
    expect(await inlineCandidacy("onnxruntime", ranged, CPU)).toBe(
      "its graph has operators whose cost the shapes do not bound: Range",
    );
    // Control flow: a Loop's body runs as often as its input says (the writer leaves out its body; only the op is read).
    const looped = file(
      "loop.onnx",
      writeOnnxModel({
        inputs: [value("trips"), { name: "cond", datatype: "BOOL", shape: [1] }],
        outputs: [value("out")],
        nodes: [
          { opType: "Loop", inputs: ["trips", "cond"], outputs: ["out"] },
          { opType: "Add", inputs: ["trips", "trips"], outputs: ["twice"] },
        ],
      }),
    );
    expect(await inlineCandidacy("onnxruntime", looped, CPU)).toBe(
      "its graph has operators whose cost the shapes do not bound: Loop",
    );
  });
});

describe("probeInputs", () => {
  it("fills the batch dimension with max_batch_size and the rest as declared, all zeros", () => {
    const inputs = probeInputs(
      [
        { name: "a", datatype: "FP32", shape: [-1, 16] },
        { name: "b", datatype: "INT8", shape: [-1, 2, 3] },
      ],
      8,
    );
    expect(Array.isArray(inputs) && inputs.map((t) => [t.name, t.shape, t.data.length])).toEqual([
      ["a", [8, 16], 512],
      ["b", [8, 2, 3], 48],
    ]);
    expect(Array.isArray(inputs) && inputs.every((t) => t.data.every((byte) => byte === 0))).toBe(true);
    // A model without batching: its shapes as they are.
    const fixed = probeInputs([{ name: "a", datatype: "FP32", shape: [3, 4] }], 0);
    expect(Array.isArray(fixed) && fixed[0]!.shape).toEqual([3, 4]);
  });

  it("says why there is no largest request: dynamic dimensions, BYTES, non-tensors, too many bytes", () => {
    expect(probeInputs([{ name: "a", datatype: "FP32", shape: [-1, -1] }], 8)).toBe(
      "input 'a' has a dynamic dimension (axis 1)",
    );
    expect(probeInputs([{ name: "a", datatype: "FP32", shape: [-1, 4] }], 0)).toBe(
      "input 'a' has a dynamic dimension (axis 0)",
    );
    expect(probeInputs([{ name: "s", datatype: "BYTES", shape: [-1, 1] }], 8)).toBe(
      "input 's' is BYTES (of variable size)",
    );
    expect(probeInputs([{ name: "q", datatype: undefined, shape: [] }], 8)).toBe("input 'q' is not a tensor");
    expect(probeInputs([{ name: "img", datatype: "FP32", shape: [-1, 3, 224, 224] }], 8)).toBe(
      `its largest request holds over ${INLINE_MAX_BATCH_BYTES} bytes of inputs`,
    );
  });
});

describe("measureExecutions", () => {
  it("times the runs after the warm-up ones and gives their lower quartile, median and slowest", async () => {
    const costs = [50, 50, 50, 1, 2, 3, 4, 30];
    let run = 0;
    const instance = { execute: async () => busyCpu(costs[run++]!) };
    const { lowerQuartileNs, medianNs, maxNs, aborted } = await measureExecutions(instance, [], { warm: 3, timed: 5 });
    expect(run).toBe(8);
    expect(lowerQuartileNs).toBeGreaterThanOrEqual(2e6);
    expect(lowerQuartileNs).toBeLessThan(30e6);
    expect(medianNs).toBeGreaterThanOrEqual(3e6);
    expect(medianNs).toBeLessThan(30e6);
    expect(maxNs).toBeGreaterThanOrEqual(30e6);
    expect(aborted).toBe(false);
  });

  it("ends at the first run over the abort limit (the first run may take ten times it), without more runs", async () => {
    const costs = [15, 2, 1, 8, 1, 1];
    let run = 0;
    const instance = { execute: async () => busyCpu(costs[run++]!) };
    const result = await measureExecutions(instance, [], { warm: 1, timed: 5, abortNs: 5e6 });
    expect(run).toBe(4);
    expect(result.aborted).toBe(true);
    expect(result.medianNs).toBeGreaterThanOrEqual(8e6);
  });
});

/** Spins until the process used `ms` of CPU (not of wall time: a preempted spin must still cost what it says). */
function busyCpu(ms: number) {
  const start = process.cpuUsage();
  for (;;) {
    const used = process.cpuUsage(start);
    if ((used.user + used.system) / 1000 >= ms) break;
  }
  return { outputs: [], timing: { computeInputNs: 0, computeInferNs: 0, computeOutputNs: 0 } };
}
