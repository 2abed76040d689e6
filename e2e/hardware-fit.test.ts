import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApiSession } from "./support/api-client.js";
import { signedIn, startControlPlaneServer } from "./support/control-plane-server.js";
import { REPO_ROOT, type RunningOperon, tempRepository } from "./support/operon-process.js";

/**
 * Hardware fit (issue 25) through the real server: a model whose config
 * allows CPU and GPU (operon_hardware_kinds "CPU,GPU") runs where 1,000
 * inferences at the p99 budget cost least, by perf reports measured on a
 * CPU and a GPU hardware profile (imported CSVs, each on its profile).
 *
 * Prices: the CPU profile 0.40 an hour over 4 CPU slots = 0.10 an
 * instance-hour; the GPU profile 4.00 an hour, 80 % of it for its 2 GPUs
 * over 2 slots each = 0.80. Measured at 10 req/s per CPU instance and 400
 * per GPU instance: the GPU costs 0.000556 per 1,000, the CPU 0.00278.
 *
 * The GPU host is faked as the GPU tests fake one: OPERON_GPU_PROBE_ROOT
 * gives the gateway's inventory two GPUs, and a fake libnvidia-ml.so.1
 * (native/test-fixtures/fake-nvml.cc, named by OPERON_NVML_LIB) lists them
 * to the scheduler. The model is a TypeScript model that declares
 * `usesGpu = true`, so its KIND_GPU instances load. The GPU-less host runs
 * with CUDA_VISIBLE_DEVICES="" and no NVML: the scheduler never tries GPU.
 */
const HEADER =
  "Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency";
/** One perf_analyzer step at `rps` with p99 5 ms (within the scheduler's 100 ms budget). */
const csvAt = (rps: number): string => `${HEADER}\n1,${rps},10,100,10,10,4000,10,2,4000,4500,4800,5000\n`;

const MODEL = `export default class {
  usesGpu = true;
  async execute(requests) {
    await new Promise((resolve) => setTimeout(resolve, 5));
    return requests.map((request) => ({ outputs: [request.input("IN").rename("OUT")] }));
  }
}`;
const CONFIG = `name: "fit"
backend: "typescript"
max_batch_size: 0
input [ { name: "IN", data_type: TYPE_FP32, dims: [ 1 ] } ]
output [ { name: "OUT", data_type: TYPE_FP32, dims: [ 1 ] } ]
instance_group [ { kind: KIND_CPU, count: 1 } ]
parameters { key: "operon_hardware_kinds" value: { string_value: "CPU,GPU" } }`;
const BODY = JSON.stringify({ inputs: [{ name: "IN", datatype: "FP32", shape: [1], data: [1] }] });

function fitRepository(): string {
  const repository = tempRepository();
  mkdirSync(join(repository, "fit", "1"), { recursive: true });
  writeFileSync(join(repository, "fit", "config.pbtxt"), CONFIG);
  writeFileSync(join(repository, "fit", "1", "model.mjs"), MODEL);
  return repository;
}

const SCHEDULER_FLAGS = [
  "--load-model",
  "fit",
  "--scheduler-period-secs",
  "1",
  "--scheduler-cooldown-secs",
  "2",
  "--scheduler-cpu-slots",
  "4",
  "--scheduler-gpu-slots",
  "2",
];

async function workersOf(server: RunningOperon, model: string): Promise<Array<[string, number | null]>> {
  const body = (await (await fetch(`${server.httpUrl}/v2/operon/workers`)).json()) as {
    workers: Array<{ model: string; kind: string; device: number | null; state: string }>;
  };
  return body.workers
    .filter((worker) => worker.model === model && worker.state === "READY")
    .map((worker) => [worker.kind, worker.device]);
}

async function waitFor<T>(what: string, probe: () => Promise<T>, done: (value: T) => boolean, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  let last = await probe();
  while (!done(last)) {
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last seen ${JSON.stringify(last)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
    last = await probe();
  }
  return last;
}

/** Profiles and one report per kind, each imported on its profile. */
async function profilesAndReports(admin: ApiSession, gpuRps: number): Promise<{ gpuProfileId: string }> {
  const cpu = await admin.client.hardware.create.mutate({ name: "c-host", kind: "CPU", costPerHour: 0.4 });
  const gpu = await admin.client.hardware.create.mutate({
    name: "g-host",
    kind: "GPU",
    gpuCount: 2,
    gpuModel: "fake",
    gpuPriceShare: 0.8,
    costPerHour: 4,
  });
  const target = { kind: "MODEL" as const, name: "fit" };
  await admin.client.perf.importCsv.mutate({ target, fileName: "cpu.csv", csv: csvAt(10), hardwareProfileId: cpu.id });
  await admin.client.perf.importCsv.mutate({
    target,
    fileName: "gpu.csv",
    csv: csvAt(gpuRps),
    hardwareProfileId: gpu.id,
  });
  return { gpuProfileId: gpu.id };
}

/** `clients` loops of requests to `fit`; the statuses and failures when stopped. */
function load(server: RunningOperon, clients: number): { stop: () => Promise<{ ok: number; failures: string[] }> } {
  let running = true;
  let ok = 0;
  const failures: string[] = [];
  const loops = Array.from({ length: clients }, async () => {
    while (running) {
      try {
        const response = await fetch(`${server.httpUrl}/v2/models/fit/infer`, { method: "POST", body: BODY });
        const text = await response.text();
        if (response.status === 200) ok += 1;
        else failures.push(`${response.status} ${text}`);
      } catch (error) {
        failures.push(String(error));
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  });
  return {
    stop: async () => {
      running = false;
      await Promise.all(loops);
      return { ok, failures };
    },
  };
}

describe("hardware fit on a (fake) GPU host: the choice follows the cost", () => {
  let server: RunningOperon;
  let admin: ApiSession;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "operon-fake-gpu-host-"));
    const fakeNvml = join(dir, "libnvidia-ml.so.1");
    execFileSync(process.env.CXX || "g++", [
      "-shared",
      "-fPIC",
      "-O1",
      "-o",
      fakeNvml,
      join(REPO_ROOT, "native/test-fixtures/fake-nvml.cc"),
    ]);
    // The gateway's GPU probe: a driver control device and two GPUs bound (as /dev and /proc show them).
    mkdirSync(join(dir, "root/dev"), { recursive: true });
    writeFileSync(join(dir, "root/dev/nvidiactl"), "");
    for (const bus of ["0000:01:00.0", "0000:02:00.0"])
      mkdirSync(join(dir, "root/proc/driver/nvidia/gpus", bus), { recursive: true });
    server = await startControlPlaneServer(["--model-repository", fitRepository(), ...SCHEDULER_FLAGS], {
      env: { OPERON_GPU_PROBE_ROOT: join(dir, "root"), OPERON_NVML_LIB: fakeNvml, CUDA_VISIBLE_DEVICES: "0,1" },
    });
    admin = await signedIn(server);
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it("moves the model to the GPU when the GPU is cheaper per 1,000 inferences, under load, with no failed request", async () => {
    expect(await workersOf(server, "fit")).toEqual([["CPU", null]]);
    const traffic = load(server, 2);
    let outcome: { ok: number; failures: string[] };
    try {
      await profilesAndReports(admin, 400);
      // One round of one instance on each of the two GPUs.
      await waitFor(
        "fit to move to the GPUs",
        () => workersOf(server, "fit"),
        (workers) =>
          JSON.stringify(workers) ===
          JSON.stringify([
            ["GPU", 0],
            ["GPU", 1],
          ]),
        30_000,
      );
      await new Promise((resolve) => setTimeout(resolve, 500));
    } finally {
      outcome = await traffic.stop();
    }
    expect(outcome.failures).toEqual([]);
    expect(outcome.ok).toBeGreaterThan(20);
    // Recorded once the gateway has moved it (the old instance drained).
    const move = (await waitFor(
      "the MOVE decision",
      async () =>
        (
          await admin.client.scheduler.decisions.query({ model: "fit" })
        ).decisions.find((decision) => decision.action === "MOVE"),
      (decision) => decision !== undefined,
      10_000,
    ))!;
    // One round on the two GPUs (the count the CPU had depends on how fast the load ran before the reports came).
    expect(move).toMatchObject({ kind: "GPU", toCount: 2, applied: true });
    expect(move.reason).toMatch(
      /^moves from CPU to GPU: GPU is the cheapest: 0\.000556 USD per 1,000 inferences at the p99 budget \(vs CPU 0\.00278\)/,
    );
    const audit = await admin.client.audit.list.query({ action: "scheduler.move", limit: 10 });
    expect(audit.events.length).toBeGreaterThan(0);
  }, 90_000);

  it("shows each candidate kind with its cost and why one was chosen on the scheduler's status", async () => {
    const status = await waitFor(
      "the status to show the GPU as chosen",
      () => admin.client.scheduler.status.query(),
      (value) => {
        const fit = value.models.find((m) => m.model === "fit");
        return fit?.kind === "GPU" && fit.hardware?.chosen === "GPU";
      },
      10_000,
    );
    const fit = status.models.find((m) => m.model === "fit")!;
    expect(fit.kind).toBe("GPU");
    expect(fit.hardware!.allowed).toEqual(["CPU", "GPU"]);
    expect(fit.hardware!.candidates).toEqual([
      expect.objectContaining({ kind: "CPU", profile: "c-host", eligible: true, capacityRps: 10 }),
      expect.objectContaining({ kind: "GPU", profile: "g-host", eligible: true, capacityRps: 400 }),
    ]);
    expect(fit.hardware!.candidates[0]!.costPer1000).toBeCloseTo(0.1 / 36, 9);
    expect(fit.hardware!.candidates[1]!.costPer1000).toBeCloseTo(0.8 / 1440, 9);
    expect(fit.hardware!.reason).toMatch(/^GPU is the cheapest/);
  });

  it("moves it back to the CPU once a newer GPU report makes the GPU the dearer", async () => {
    const gpu = (await admin.client.hardware.list.query()).find((profile) => profile.name === "g-host")!;
    // 40 req/s per GPU instance: 0.80 / 144 = 0.00556 per 1,000, twice the CPU's.
    await admin.client.perf.importCsv.mutate({
      target: { kind: "MODEL", name: "fit" },
      fileName: "gpu-slow.csv",
      csv: csvAt(40),
      hardwareProfileId: gpu.id,
    });
    // The decision is recorded once the gateway has moved it (the old instances drained).
    const back = (await waitFor(
      "fit to move back to the CPU",
      async () =>
        (
          await admin.client.scheduler.decisions.query({ model: "fit" })
        ).decisions.find((decision) => decision.action === "MOVE" && decision.kind === "CPU"),
      (decision) => decision !== undefined,
      30_000,
    ))!;
    expect(back).toMatchObject({ fromCount: 2, applied: true });
    // On the CPU again (as many instances as the demand of the last period asked: the load has just stopped).
    const workers = await workersOf(server, "fit");
    expect(workers.length).toBeGreaterThan(0);
    expect(workers.every(([kind]) => kind === "CPU")).toBe(true);
    expect(back.reason).toMatch(/^moves from GPU to CPU: CPU is the cheapest: 0\.00278 USD .*\(vs GPU 0\.00556\)/);
  }, 60_000);

  it("the move endpoint is the admin's: a key without the admin scope is refused", async () => {
    // The server runs without --require-api-key for the rest of this file; the scope check itself: an infer key.
    const key = (await admin.client.apiKeys.create.mutate({ name: "client", scopes: ["infer"] })).key;
    const post = (headers: Record<string, string>) =>
      fetch(`${server.httpUrl}/v2/operon/models/fit/instances`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify({ count: 2, kind: "KIND_GPU" }),
      });
    let refused = await post({ authorization: `Bearer ${key}` });
    // Keys reach the gateway within a second.
    for (let i = 0; i < 50 && refused.status === 401; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      refused = await post({ authorization: `Bearer ${key}` });
    }
    expect(refused.status).toBe(403);
    expect(await refused.text()).toMatch(/lacks the 'admin' scope/);
    // Once a user key exists, model control needs a key: anonymous callers are refused too.
    expect((await post({})).status).toBe(401);
    const adminKey = (await admin.client.apiKeys.create.mutate({ name: "ops", scopes: ["admin"] })).key;
    const workers = (await (
      await fetch(`${server.httpUrl}/v2/operon/workers`, { headers: { authorization: `Bearer ${adminKey}` } })
    ).json()) as { workers: Array<{ model: string; kind: string }> };
    const kinds = workers.workers.filter((worker) => worker.model === "fit").map((worker) => worker.kind);
    expect(kinds.length).toBeGreaterThan(0);
    expect(new Set(kinds)).toEqual(new Set(["CPU"]));
  }, 30_000);
});

describe("hardware fit on a host without a GPU", () => {
  let server: RunningOperon;
  let admin: ApiSession;

  beforeAll(async () => {
    server = await startControlPlaneServer(["--model-repository", fitRepository(), ...SCHEDULER_FLAGS], {
      env: { CUDA_VISIBLE_DEVICES: "" },
    });
    admin = await signedIn(server);
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
  });

  it("never tries the GPU, however cheap: the candidate says the host has none", async () => {
    await profilesAndReports(admin, 4000);
    const status = await waitFor(
      "the status to show the hardware fit",
      () => admin.client.scheduler.status.query(),
      // The status is the last period's: wait for one that saw the CPU report.
      (value) => value.models.find((m) => m.model === "fit")?.hardware?.candidates[0]?.eligible === true,
      15_000,
    );
    const fit = status.models.find((m) => m.model === "fit")!;
    expect(fit.hardware).toMatchObject({ chosen: "CPU" });
    expect(fit.hardware!.candidates[1]).toMatchObject({ kind: "GPU", eligible: false, why: "this host has no GPU" });
    // Several periods more: still on the CPU, and no MOVE decided.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    expect(await workersOf(server, "fit")).toEqual([["CPU", null]]);
    const { decisions } = await admin.client.scheduler.decisions.query({ model: "fit" });
    expect(decisions.filter((decision) => decision.action === "MOVE")).toEqual([]);
  }, 60_000);

  it("the gateway itself refuses a move to KIND_GPU, saying the host has no GPU, and the model keeps serving", async () => {
    const response = await fetch(`${server.httpUrl}/v2/operon/models/fit/instances`, {
      method: "POST",
      body: JSON.stringify({ count: 1, kind: "KIND_GPU" }),
    });
    expect(response.status).toBe(503);
    expect(await response.text()).toContain(
      "model 'fit' cannot move to KIND_GPU: this host has no usable GPU (CUDA_VISIBLE_DEVICES is set and empty (every GPU hidden))",
    );
    expect(await workersOf(server, "fit")).toEqual([["CPU", null]]);
    const infer = await fetch(`${server.httpUrl}/v2/models/fit/infer`, { method: "POST", body: BODY });
    expect(infer.status).toBe(200);
  });

  it("a model allowing a kind with no hardware profile gets a HOLD saying so", async () => {
    // A fresh pair of servers is not needed: delete the GPU profile here (not the default) and read the HOLD.
    const gpu = (await admin.client.hardware.list.query()).find((profile) => profile.name === "g-host")!;
    await admin.client.hardware.delete.mutate({ id: gpu.id });
    const expected = "hardware fit: GPU: the model allows GPU, but no GPU hardware profile exists: add one (Costs)";
    const hold = await waitFor(
      "the HOLD naming the GPU",
      async () =>
        (await admin.client.scheduler.decisions.query({ model: "fit" })).decisions.find(
          (decision) => decision.reason === expected,
        ),
      (decision) => decision !== undefined,
      15_000,
    );
    expect(hold).toMatchObject({ action: "HOLD", applied: false });
    // The model keeps running on the CPU meanwhile.
    expect(await workersOf(server, "fit")).toEqual([["CPU", null]]);
  }, 30_000);
});
