// The NVML reader against a fake libnvidia-ml.so.1 built here (fake-nvml.ts):
// the real addon, dlopen, and the pool-thread sample, with fixed readings.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildFakeNvml, FAKE_NVML_DEVICES } from "./fake-nvml.js";
import { openNvml } from "./nvml.js";

const HOST = new URL("../build/tritonserver/bin/operon-backend-host", import.meta.url).pathname;

let dir: string;
let fakeLibrary: string;

beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "operon-nvml-"));
  fakeLibrary = buildFakeNvml(dir);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("openNvml", () => {
  it("reads every device in Triton's units, leaving out what a device does not support", async () => {
    const reader = openNvml(fakeLibrary);
    try {
      expect(reader.deviceCount).toBe(2);
      const first = await reader.sample();
      expect(first).toEqual(FAKE_NVML_DEVICES.map((device, index) => ({ index, ...device })));
      const second = await reader.sample();
      // Energy is cumulative: 2.5 J more per reading of the fake.
      expect(second[0]!.energyJoules).toBeCloseTo(1002.5, 6);
      expect(second[1]!.energyJoules).toBeNull();
    } finally {
      reader.close();
    }
    reader.close();
    await expect(reader.sample()).rejects.toThrow(/closed/);
  });

  it("says why when the library is missing, is not NVML, or cannot start", () => {
    expect(() => openNvml(path.join(dir, "absent", "libnvidia-ml.so.1"))).toThrow(/cannot load .*absent/);
    // A shared library without NVML's symbols (libm is on every host).
    expect(() => openNvml("libm.so.6")).toThrow(/is not NVML: it has no nvmlInit_v2/);
    process.env.FAKE_NVML_INIT_ERROR = "9";
    try {
      expect(() => openNvml(fakeLibrary)).toThrow("nvmlInit_v2 failed: Driver Not Loaded (9)");
    } finally {
      delete process.env.FAKE_NVML_INIT_ERROR;
    }
    // A failed open leaves nothing half-open: the next one works.
    const reader = openNvml(fakeLibrary);
    expect(reader.deviceCount).toBe(2);
    reader.close();
  });
});

describe("operon-backend-host nvml-check (the device check's NVML step, no Node)", () => {
  it("reads the same devices through the same reader, and fails saying why without the library", () => {
    const output = execFileSync(HOST, ["nvml-check", fakeLibrary], { encoding: "utf8" });
    expect(output).toContain("nvml-check: 2 device(s)");
    expect(output).toMatch(
      /0 GPU-00000000-1111-2222-3333-444444444444 utilization 37\.000 %, memory 20\.000 GiB of 80\.000 GiB, power 250\.500 W of 700\.000 W/,
    );
    expect(output).toMatch(/1 GPU-55555555-6666-7777-8888-999999999999 .*power n\/a of 700\.000 W, energy n\/a/);
    expect(output).toContain("nvml-check: passed");
    const missing = spawnSync(HOST, ["nvml-check", path.join(dir, "absent.so")], { encoding: "utf8" });
    expect(missing.status).toBe(1);
    expect(missing.stdout).toMatch(/nvml-check: FAIL cannot load .*absent\.so/);
  });
});
