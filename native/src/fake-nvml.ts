import { execFileSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/**
 * For tests on hosts without a GPU: compiles native/test-fixtures/fake-nvml.cc
 * (NVML's entry points with fixed readings, see the file) into
 * `<dir>/libnvidia-ml.so.1`, to point OPERON_NVML_LIB (or openNvml) at.
 * Throws with g++'s output when it cannot build.
 */
export const FAKE_NVML_SOURCE = fileURLToPath(new URL("../test-fixtures/fake-nvml.cc", import.meta.url));

/** The fixed readings the fake library reports (fake-nvml.cc), as the metrics show them. */
export const FAKE_NVML_DEVICES = [
  {
    uuid: "GPU-00000000-1111-2222-3333-444444444444",
    utilization: 0.37,
    memoryTotalBytes: 80 * 1024 ** 3,
    memoryUsedBytes: 20 * 1024 ** 3,
    powerUsageWatts: 250.5,
    powerLimitWatts: 700,
    /** The first reading; each later one adds 2.5 J. */
    energyJoules: 1000,
  },
  {
    uuid: "GPU-55555555-6666-7777-8888-999999999999",
    utilization: 0.9,
    memoryTotalBytes: 80 * 1024 ** 3,
    memoryUsedBytes: 60 * 1024 ** 3,
    powerUsageWatts: null,
    powerLimitWatts: 700,
    energyJoules: null,
  },
] as const;

export function buildFakeNvml(dir: string): string {
  mkdirSync(dir, { recursive: true });
  const output = path.join(dir, "libnvidia-ml.so.1");
  execFileSync(process.env.CXX || "g++", ["-shared", "-fPIC", "-O1", "-o", output, FAKE_NVML_SOURCE], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  return output;
}
