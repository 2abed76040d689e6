import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO_ROOT, type RunningOperon, startOperon, tempRepository } from "./support/operon-process.js";

/**
 * Triton's GPU metrics through the real server on a host without a GPU: the
 * server loads a fake libnvidia-ml.so.1 built here from
 * native/test-fixtures/fake-nvml.cc (NVML's real entry points and ABI, fixed
 * readings: device 0 at 37 %, 20 of 80 GiB, 250.5 W of 700 W, 2.5 J more
 * energy per reading; device 1 at 90 %, 60 of 80 GiB, no power or energy
 * reading), named by OPERON_NVML_LIB. Also: no library → no nv_gpu_* series
 * and one log line saying why; --allow-gpu-metrics false → none.
 */
const GIB = 1024 ** 3;
const UUID0 = "GPU-00000000-1111-2222-3333-444444444444";
const UUID1 = "GPU-55555555-6666-7777-8888-999999999999";

let dir: string;
let fakeNvml: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "operon-fake-nvml-"));
  fakeNvml = join(dir, "libnvidia-ml.so.1");
  execFileSync(process.env.CXX || "g++", [
    "-shared",
    "-fPIC",
    "-O1",
    "-o",
    fakeNvml,
    join(REPO_ROOT, "native/test-fixtures/fake-nvml.cc"),
  ]);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** name{labels} → value, for the series whose name starts with nv_gpu_ or nv_energy_. */
async function gpuSeries(metricsUrl: string): Promise<Map<string, number>> {
  const text = await (await fetch(metricsUrl)).text();
  const series = new Map<string, number>();
  for (const line of text.split("\n")) {
    const match = /^((?:nv_gpu_|nv_energy_)\w*(?:\{[^}]*\})?) (\S+)$/.exec(line);
    if (match) series.set(match[1]!, Number(match[2]));
  }
  return series;
}

async function workersGpus(server: RunningOperon): Promise<Array<Record<string, unknown>>> {
  const body = (await (await fetch(`${server.httpUrl}/v2/operon/workers`)).json()) as {
    gpus: Array<Record<string, unknown>>;
  };
  return body.gpus;
}

describe("GPU metrics from NVML (a fake libnvidia-ml.so.1)", () => {
  let server: RunningOperon;
  beforeAll(async () => {
    server = await startOperon(["--model-repository", tempRepository(), "--metrics-interval-ms", "200"], {
      env: { OPERON_NVML_LIB: fakeNvml },
    });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("exports every reading under Triton's names, units and gpu_uuid label", async () => {
    const series = await gpuSeries(server.metricsUrl);
    expect(series.get(`nv_gpu_utilization{gpu_uuid="${UUID0}"}`)).toBe(0.37);
    expect(series.get(`nv_gpu_utilization{gpu_uuid="${UUID1}"}`)).toBe(0.9);
    expect(series.get(`nv_gpu_memory_total_bytes{gpu_uuid="${UUID0}"}`)).toBe(80 * GIB);
    expect(series.get(`nv_gpu_memory_used_bytes{gpu_uuid="${UUID0}"}`)).toBe(20 * GIB);
    expect(series.get(`nv_gpu_memory_used_bytes{gpu_uuid="${UUID1}"}`)).toBe(60 * GIB);
    expect(series.get(`nv_gpu_power_usage{gpu_uuid="${UUID0}"}`)).toBe(250.5);
    expect(series.get(`nv_gpu_power_limit{gpu_uuid="${UUID0}"}`)).toBe(700);
    expect(series.get(`nv_gpu_power_limit{gpu_uuid="${UUID1}"}`)).toBe(700);
    // What device 1 does not report is left out, not exported as 0.
    expect(series.has(`nv_gpu_power_usage{gpu_uuid="${UUID1}"}`)).toBe(false);
    expect(series.has(`nv_energy_consumption{gpu_uuid="${UUID1}"}`)).toBe(false);
    expect(server.output()).toMatch(/GPU metrics from NVML/);
  });

  it("counts energy in joules from the server's start, read again every interval", async () => {
    const energy = (series: Map<string, number>): number => series.get(`nv_energy_consumption{gpu_uuid="${UUID0}"}`)!;
    const first = energy(await gpuSeries(server.metricsUrl));
    await new Promise((resolve) => setTimeout(resolve, 700));
    const later = energy(await gpuSeries(server.metricsUrl));
    // 2.5 J per reading of the fake: a whole number of readings after the first, more of them later.
    expect(first % 2.5).toBe(0);
    expect(later % 2.5).toBe(0);
    expect(later).toBeGreaterThan(first);
  });

  it("lists the GPUs with their CUDA ordinals on the workers endpoint", async () => {
    expect(await workersGpus(server)).toEqual([
      expect.objectContaining({ device: 0, uuid: UUID0, utilization: 0.37, memoryUsedBytes: 20 * GIB }),
      expect.objectContaining({ device: 1, uuid: UUID1, utilization: 0.9, powerUsageWatts: null }),
    ]);
  });
});

describe("a GPU driver that hangs", () => {
  it("holds neither the start, nor the event loop, nor the exit: the reading waits on a thread of its own", async () => {
    const started = Date.now();
    const server = await startOperon(["--model-repository", tempRepository()], {
      env: { OPERON_NVML_LIB: fakeNvml, FAKE_NVML_HANG_MS: "30000" },
    });
    try {
      // The first reading is waited for at most 2 s; the server is up long before the 30 s reading ends.
      expect(Date.now() - started).toBeLessThan(25_000);
      const before = Date.now();
      expect((await fetch(`${server.httpUrl}/v2/health/ready`)).status).toBe(200);
      const series = await gpuSeries(server.metricsUrl);
      expect(Date.now() - before).toBeLessThan(5_000);
      expect(series.has(`nv_gpu_utilization{gpu_uuid="${UUID0}"}`)).toBe(false);
    } finally {
      const stopping = Date.now();
      expect(await server.stop()).toBe(0);
      // The reading still hangs (30 s per device): the exit does not wait for it.
      expect(Date.now() - stopping).toBeLessThan(15_000);
    }
  }, 60_000);
});

describe("GPU metrics without NVML", () => {
  it("exports no nv_gpu_* series and says once why, when the library is absent", async () => {
    const missing = join(dir, "absent", "libnvidia-ml.so.1");
    const server = await startOperon(["--model-repository", tempRepository(), "--metrics-interval-ms", "200"], {
      env: { OPERON_NVML_LIB: missing },
    });
    try {
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect([...(await gpuSeries(server.metricsUrl)).keys()]).toEqual([]);
      expect(await workersGpus(server)).toEqual([]);
      const lines = server
        .output()
        .split("\n")
        .filter((line) => line.includes("no GPU metrics"));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(`cannot load ${missing}`);
    } finally {
      await server.stop();
    }
  });

  it("exports none with --allow-gpu-metrics false, and maps ordinals through CUDA_VISIBLE_DEVICES", async () => {
    const off = await startOperon(["--model-repository", tempRepository(), "--allow-gpu-metrics", "false"], {
      env: { OPERON_NVML_LIB: fakeNvml },
    });
    try {
      expect([...(await gpuSeries(off.metricsUrl)).keys()]).toEqual([]);
      expect(off.output()).not.toMatch(/GPU metrics/);
    } finally {
      await off.stop();
    }
    // The driver's GPU 1 is this server's CUDA device 0; GPU 0 is hidden from its instances.
    const narrowed = await startOperon(["--model-repository", tempRepository()], {
      env: { OPERON_NVML_LIB: fakeNvml, CUDA_VISIBLE_DEVICES: "1" },
    });
    try {
      expect((await workersGpus(narrowed)).map((gpu) => [gpu.uuid, gpu.device])).toEqual([
        [UUID0, null],
        [UUID1, 0],
      ]);
    } finally {
      await narrowed.stop();
    }
  });
});
