import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { probeGpus } from "./gpu-inventory.js";

const root = mkdtempSync(path.join(os.tmpdir(), "operon-gpu-probe-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A fake /dev and /proc/driver/nvidia/gpus with `gpus` GPUs (ctl: whether /dev/nvidiactl exists). */
function host(
  name: string,
  gpus: number,
  ctl = true,
  proc = true,
): { nvidiactl: string; procGpus: string; dev: string } {
  const dev = path.join(root, name, "dev");
  const procGpus = path.join(root, name, "proc-gpus");
  mkdirSync(dev, { recursive: true });
  mkdirSync(procGpus, { recursive: true });
  if (ctl) writeFileSync(path.join(dev, "nvidiactl"), "");
  for (let i = 0; i < gpus; i += 1) {
    writeFileSync(path.join(dev, `nvidia${i}`), "");
    if (proc) mkdirSync(path.join(procGpus, `0000:0${i}:00.0`));
  }
  return { nvidiactl: path.join(dev, "nvidiactl"), procGpus, dev };
}

describe("probeGpus", () => {
  it("finds no GPU without the driver's control device, and says so", () => {
    const found = probeGpus({ ...host("none", 0, false), visibleDevices: undefined });
    expect(found.count).toBe(0);
    expect(found.reason).toMatch(/no NVIDIA driver on this host \(.*nvidiactl does not exist\)/);
  });

  it("counts the GPUs the driver lists (/proc first, /dev/nvidia<N> otherwise)", () => {
    expect(probeGpus({ ...host("two", 2), visibleDevices: undefined })).toEqual({ count: 2 });
    expect(probeGpus({ ...host("devonly", 3, true, false), visibleDevices: undefined })).toEqual({ count: 3 });
    expect(probeGpus({ ...host("ctlonly", 0), visibleDevices: undefined }).reason).toMatch(/lists no GPU/);
  });

  it("narrows them by CUDA_VISIBLE_DEVICES as CUDA does", () => {
    const paths = host("visible", 4);
    expect(probeGpus({ ...paths, visibleDevices: "2,3" })).toEqual({
      count: 2,
      reason: "CUDA_VISIBLE_DEVICES=2,3 shows 2 of 4 GPUs",
    });
    expect(probeGpus({ ...paths, visibleDevices: "" }).count).toBe(0);
  });

  it("has none with an empty CUDA_VISIBLE_DEVICES on any host, driver or not (how tests pin the inventory)", () => {
    const hidden = { count: 0, reason: "CUDA_VISIBLE_DEVICES is set and empty (every GPU hidden)" };
    expect(probeGpus({ ...host("hidden", 2), visibleDevices: "" })).toEqual(hidden);
    expect(probeGpus({ ...host("hidden-nodriver", 0, false), visibleDevices: " " })).toEqual(hidden);
  });
});
