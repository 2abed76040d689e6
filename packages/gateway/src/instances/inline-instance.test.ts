import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { OperonError } from "@operon/protocol/errors";
import { describe, expect, it } from "vitest";
import { InlineInstance } from "./inline-instance.js";

/**
 * An in-process backend module as @operon/worker's in-process-backend.js
 * exports one: execute echoes its inputs after busy-waiting `busyMs` (the
 * first input's first byte, in ms), or throws when that byte is 255.
 */
function fakeEntry(): { entry: string; finalized: string } {
  const dir = mkdtempSync(join(tmpdir(), "operon-inline-"));
  const finalized = join(dir, "finalized");
  const entry = join(dir, "in-process-backend.mjs");
  writeFileSync(
    entry,
    `import { writeFileSync } from "node:fs";
export async function loadInProcessBackend(load, log) {
  log("info", "loaded " + load.instanceName);
  return {
    inputs: [{ name: "x", datatype: "UINT8", shape: [-1] }],
    outputs: [{ name: "x", datatype: "UINT8", shape: [-1] }],
    async execute(inputs) {
      const busyMs = inputs[0].data[0];
      if (busyMs === 255) throw new Error("backend fault");
      const until = performance.now() + busyMs;
      while (performance.now() < until) {}
      return { outputs: inputs, timing: { computeInputNs: 0, computeInferNs: busyMs * 1e6, computeOutputNs: 0 } };
    },
    async finalize() { writeFileSync(${JSON.stringify(finalized)}, "yes"); },
  };
}
`,
  );
  return { entry, finalized };
}

const tensor = (first: number) => ({
  name: "x",
  datatype: "UINT8" as const,
  shape: [2],
  data: Buffer.from([first, 7]),
});
const LOAD = { backend: "echo", modelPath: "/nowhere/model.onnx", config: {} };

describe("InlineInstance", () => {
  it("runs executions on the event loop one at a time, in order, with its inputs' buffers as they are", async () => {
    const { entry } = fakeEntry();
    const instance = InlineInstance.start({ entry, instanceName: "m_0_0" });
    expect(await instance.load(LOAD)).toEqual({
      inputs: [{ name: "x", datatype: "UINT8", shape: [-1] }],
      outputs: [{ name: "x", datatype: "UINT8", shape: [-1] }],
    });
    const order: number[] = [];
    const inputs = [tensor(1), tensor(0), tensor(1)];
    const runs = inputs.map((input, i) =>
      instance.execute([input]).then((result) => {
        order.push(i);
        return result;
      }),
    );
    expect(instance.inFlight).toBe(3);
    const results = await Promise.all(runs);
    expect(order).toEqual([0, 1, 2]);
    // Nothing copied: the output is the input's own buffer.
    expect(results[1]!.outputs[0]!.data).toBe(inputs[1]!.data);
    expect(instance.inFlight).toBe(0);
  });

  it("fails one execution with an OperonError naming the fault and serves the next", async () => {
    const { entry } = fakeEntry();
    const instance = InlineInstance.start({ entry, instanceName: "m_0_0" });
    await instance.load(LOAD);
    const failed = instance.execute([tensor(255)]);
    const next = instance.execute([tensor(0)]);
    await expect(failed).rejects.toBeInstanceOf(OperonError);
    await expect(failed).rejects.toThrow(/backend fault/);
    expect((await next).outputs[0]!.data[1]).toBe(7);
  });

  it("warns once, naming the instance and the time, when an execution holds the event loop longer than allowed", async () => {
    const { entry } = fakeEntry();
    const lines: Array<[string, string]> = [];
    const instance = InlineInstance.start({
      entry,
      instanceName: "slow_0_0",
      slowExecuteMs: 20,
      onLog: (level, message) => lines.push([level, message]),
    });
    await instance.load(LOAD);
    await instance.execute([tensor(0)]);
    expect(lines.filter(([level]) => level === "warn")).toEqual([]);
    await instance.execute([tensor(40)]);
    await instance.execute([tensor(40)]);
    const warnings = lines.filter(([level]) => level === "warn").map(([, message]) => message);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(
      /inline instance 'slow_0_0' held the gateway's event loop for \d+\.\d ms \(over 20 ms\)/,
    );
    expect(warnings[0]).toMatch(/operon_isolation "thread"/);
  });

  it("finalizes the backend on stop after what is queued, emits an expected exit, and refuses executions after", async () => {
    const { entry, finalized } = fakeEntry();
    const instance = InlineInstance.start({ entry, instanceName: "m_0_0" });
    await instance.load(LOAD);
    const exits: unknown[] = [];
    instance.on("exit", (info) => exits.push(info));
    const queued = instance.execute([tensor(2)]);
    const stopping = instance.stop();
    expect((await queued).outputs).toHaveLength(1);
    await stopping;
    expect(readFileSync(finalized, "utf8")).toBe("yes");
    expect(exits).toEqual([{ code: 0, signal: null, expected: true }]);
    await expect(instance.execute([tensor(0)])).rejects.toThrow(/'m_0_0' \(inline\) is not running/);
  });
});
