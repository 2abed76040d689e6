// native/scripts/device-check-goals.py, which turns one device check's bench
// and PyTorch output (the Markdown that cuda-bench and device-check-torch.py
// print) into the three goals as PASS/FAIL lines. The device check
// itself needs a GPU host; its verdicts are checked here on output of the
// same shape.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

const SCRIPT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../scripts/device-check-goals.py");
const dir = mkdtempSync(path.join(os.tmpdir(), "operon-goals-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function bench(percent: number, fp16RowsPerSecond: number, oneStream: number, twoStreams: number): string {
  return `## Preprocessing kernel

| images | bytes read+written | best kernel time | bandwidth | of 4.8 TB/s |
|---|---|---|---|---|
| 2048 x 48x160 RGB | 272.9 MB | 100.0 us | ${((4.8 * percent) / 100).toFixed(2)} TB/s | ${percent} % |

## MLP 784-2048-2048-10 (operon_cuda kernels, compute only)

| precision | batch | best kernel time | rows/s | TFLOP/s |
|---|---|---|---|---|
| fp16 | 256 | 10.0 us | 1 | 1.0 |
| fp16 | 1024 | 20.0 us | ${fp16RowsPerSecond} | 1.0 |

## Pipeline: preprocess -> MLP 27648-256-10 fp16 (copies dominate), 16 batches of 256 images

| pipeline | streams | images/s | vs 1 stream |
|---|---|---|---|
| preprocess -> MLP | 1 | ${oneStream} | 1.00x |
| preprocess -> MLP | 2 | ${twoStreams} | ${(twoStreams / oneStream).toFixed(2)}x |
`;
}

const TORCH = `| precision | batch | best time | rows/s | TFLOP/s |
|---|---|---|---|---|
| fp16 | 256 | 5.0 us | 2 | 1.0 |
| fp16 | 1024 | 10.0 us | 1000000 | 1.0 |
`;

function goals(benchText: string, torchText: string): { status: number | null; lines: string[] } {
  const benchFile = path.join(dir, "bench.md");
  const torchFile = path.join(dir, "torch.md");
  writeFileSync(benchFile, benchText);
  writeFileSync(torchFile, torchText);
  const result = spawnSync("python3", [SCRIPT, benchFile, torchFile], { encoding: "utf8" });
  return { status: result.status, lines: result.stdout.trim().split("\n") };
}

describe("device-check-goals.py", () => {
  it("passes each goal at its threshold, comparing batch >= 1024 only", () => {
    expect(goals(bench(50, 500_000, 1000, 1300), TORCH)).toEqual({
      status: 0,
      lines: [
        "- PASS: preprocessing kernel 2.40 TB/s = 50 % of 4.8 TB/s (goal >= 50 %)",
        "- PASS: MLP fp16 batch 1024: 500000 rows/s = 0.50x PyTorch's 1000000 (goal >= 0.5x)",
        "- PASS: preprocess -> MLP pipeline, 2 streams 1.30x 1 stream (1300 vs 1000 images/s; goal >= 1.3x)",
      ],
    });
  });

  it("fails each goal below it", () => {
    const { status, lines } = goals(bench(49, 499_000, 1000, 1290), TORCH);
    expect(status).toBe(0);
    expect(lines.map((line) => line.slice(0, 8))).toEqual(["- FAIL: ", "- FAIL: ", "- FAIL: "]);
  });

  it("fails, exiting 1, when a step left no figure (PyTorch did not run)", () => {
    const { status, lines } = goals(bench(60, 900_000, 1000, 1500), "PyTorch sees no CUDA device");
    expect(status).toBe(1);
    expect(lines).toContain("- FAIL: MLP vs PyTorch: no batch >= 1024 measured by both");
  });
});
