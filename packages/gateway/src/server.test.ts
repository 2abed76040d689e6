import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import type { WorkerInstanceInfo, WorkersResponse } from "@operon/protocol/admin";
import { generateApiKey } from "@operon/protocol/api-keys";
import { writeAddSubModel } from "@operon/testing/onnx-model-writer";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiKeyRing } from "./auth/api-key-ring.js";
import { createLogger } from "./observability/logger.js";
import { type OperonServer, startOperonServer } from "./server.js";

/**
 * The whole server in process (real worker processes, real ONNX model):
 * the admin endpoints (workers, operator validation), the latency
 * summaries in /metrics, and API keys wired through startOperonServer.
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const WORKER_ENTRY = path.join(ROOT, "packages/worker/dist/main.js");
const dir = mkdtempSync(path.join(os.tmpdir(), "operon-server-test-"));
const repository = path.join(dir, "models");

const ADD_SUB_CONFIG = `
name: "add_sub"
backend: "onnxruntime"
max_batch_size: 8
input [
  { name: "INPUT0", data_type: TYPE_FP32, dims: [ 16 ] },
  { name: "INPUT1", data_type: TYPE_FP32, dims: [ 16 ] }
]
output [
  { name: "OUTPUT0", data_type: TYPE_FP32, dims: [ 16 ] },
  { name: "OUTPUT1", data_type: TYPE_FP32, dims: [ 16 ] }
]
instance_group [ { count: 2, kind: KIND_CPU } ]
`;

const adminKey = generateApiKey();
const ring = new ApiKeyRing();
let server: OperonServer;
let http: string;

beforeAll(async () => {
  // The workers run from dist/: make sure it reflects the sources (a no-op when up to date).
  execFileSync(process.execPath, [path.join(ROOT, "node_modules/typescript/bin/tsc"), "-b", "packages/worker"], {
    cwd: ROOT,
    stdio: "inherit",
  });
  mkdirSync(path.join(repository, "add_sub", "1"), { recursive: true });
  writeFileSync(
    path.join(repository, "add_sub", "1", "model.onnx"),
    writeAddSubModel({ datatype: "FP32", shape: [-1, 16] }),
  );
  writeFileSync(path.join(repository, "add_sub", "config.pbtxt"), ADD_SUB_CONFIG);
  server = await startOperonServer({
    modelRepositories: [repository],
    httpAddress: "127.0.0.1",
    httpPort: 0,
    grpcAddress: "127.0.0.1",
    grpcPort: 0,
    metricsAddress: "127.0.0.1",
    metricsPort: 0,
    allowHttp: true,
    allowGrpc: false,
    allowMetrics: true,
    modelControlMode: "explicit",
    loadModels: ["add_sub"],
    repositoryPollSecs: 0,
    strictModelConfig: false,
    strictReadiness: false,
    exitOnError: true,
    exitTimeoutSecs: 5,
    dataDir: path.join(dir, "data"),
    maxUploadBytes: 1 << 20,
    httpMaxBodyBytes: 1 << 20,
    defaultMaxBatchSize: 4,
    workerEntry: WORKER_ENTRY,
    // Worker processes: these tests kill one and read per-process usage (thread instances: e2e/backend-isolation).
    backendIsolation: "process",
    logger: createLogger({ destination: new Writable({ write: (_chunk, _encoding, done) => done() }) }),
    access: { ring, requireApiKey: false },
  });
  http = `http://127.0.0.1:${server.httpPort}`;
});

afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** `key`: once an admin key exists the workers view needs it (issue 28 item 14). */
async function workers(key?: string): Promise<WorkersResponse> {
  const res = await fetch(
    `${http}/v2/operon/workers`,
    key !== undefined ? { headers: { Authorization: `Bearer ${key}` } } : {},
  );
  expect(res.status).toBe(200);
  return (await res.json()) as WorkersResponse;
}

async function infer(): Promise<number> {
  const res = await fetch(`${http}/v2/models/add_sub/infer`, {
    method: "POST",
    body: JSON.stringify({
      inputs: [
        { name: "INPUT0", datatype: "FP32", shape: [1, 16], data: new Array(16).fill(2) },
        { name: "INPUT1", datatype: "FP32", shape: [1, 16], data: new Array(16).fill(1) },
      ],
    }),
  });
  await res.arrayBuffer();
  return res.status;
}

async function metricsText(): Promise<string> {
  return (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).text();
}

/** Polls until check returns a value; bounded. */
async function waitFor<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("GET /v2/operon/workers", () => {
  it("lists each instance's worker process with its usage, and the gateway's", async () => {
    const answer = await workers();
    expect(answer.hostCpuCores).toBe(os.availableParallelism());
    expect(answer.gateway.pid).toBe(process.pid);
    expect(answer.gateway.cpuSeconds).toBeGreaterThan(0);
    expect(answer.gateway.rssBytes).toBeGreaterThan(0);
    expect(answer.workers.map((worker) => worker.instance)).toEqual(["add_sub_0_0", "add_sub_0_1"]);
    for (const worker of answer.workers) {
      expect(worker).toMatchObject({
        model: "add_sub",
        version: "1",
        backend: "onnxruntime",
        kind: "CPU",
        device: null,
        state: "READY",
        restarts: 0,
      });
      expect(worker.pid).toBeGreaterThan(0);
      expect(worker.pid).not.toBe(process.pid);
      expect(Date.parse(worker.startedAt!)).toBeLessThanOrEqual(Date.now());
      if (process.platform === "linux") {
        expect(worker.cpuSeconds).toBeGreaterThanOrEqual(0);
        expect(worker.rssBytes).toBeGreaterThan(1 << 20);
      }
    }
  });

  it("counts a restart when a worker is killed, and shows the new process", async () => {
    const before = (await workers()).workers.find((worker) => worker.instance === "add_sub_0_1")!;
    process.kill(before.pid!, "SIGKILL");
    const after = await waitFor<WorkerInstanceInfo>("the killed worker to be restarted", async () => {
      const worker = (await workers()).workers.find((candidate) => candidate.instance === "add_sub_0_1")!;
      return worker.state === "READY" && worker.pid !== before.pid ? worker : undefined;
    });
    expect(after.restarts).toBe(1);
    expect(Date.parse(after.startedAt!)).toBeGreaterThan(Date.parse(before.startedAt!));
    // The other instance was not touched.
    expect((await workers()).workers.find((worker) => worker.instance === "add_sub_0_0")!.restarts).toBe(0);
  });
});

describe("POST /v2/operators/:operator/validate", () => {
  const spec = (model: string) => ({
    maxBatchSize: 8,
    inputs: [
      { name: "A", datatype: "FP32", dims: [16] },
      { name: "B", datatype: "FP32", dims: [16] },
    ],
    outputs: [{ name: "SUM", datatype: "FP32", dims: [16] }],
    steps: [{ id: "add", kind: "model", model, inputs: { INPUT0: "A", INPUT1: "B" }, outputs: { OUTPUT0: "SUM" } }],
  });
  const validate = async (name: string, body: unknown) => {
    const res = await fetch(`${http}/v2/operators/${name}/validate`, { method: "POST", body: JSON.stringify(body) });
    expect(res.status).toBe(200);
    return (await res.json()) as { valid: boolean; problems: Array<{ code?: string; message: string }> };
  };

  it("finds a spec against served models valid, and registers nothing", async () => {
    expect(await validate("summer", spec("add_sub"))).toEqual({ valid: true, problems: [] });
    expect(((await (await fetch(`${http}/v2/operators`)).json()) as { operators: unknown[] }).operators).toEqual([]);
    expect((await fetch(`${http}/v2/models/summer`)).status).toBe(404);
  });

  it("names a step's unknown model", async () => {
    const answer = await validate("summer", spec("no_such_model"));
    expect(answer.valid).toBe(false);
    expect(answer.problems).toEqual([
      expect.objectContaining({ code: "unknown-model", message: expect.stringContaining("no_such_model") }),
    ]);
  });

  it("reports a malformed spec and a name taken by a repository model", async () => {
    const malformed = await validate("summer", { steps: "none" });
    expect(malformed.valid).toBe(false);
    expect(malformed.problems[0]!.message).toMatch(/^invalid operator spec 'summer': /);
    const taken = await validate("add_sub", spec("add_sub"));
    expect(taken.valid).toBe(false);
    expect(taken.problems).toContainEqual({
      message: "'add_sub' is a model of the model repository; an operator needs a name of its own",
    });
  });
});

describe("latency summaries and API keys through startOperonServer", () => {
  it("exports the summaries after an inference and drops them at unload; model control locks once an admin key exists", async () => {
    expect(server.access?.loopbackOnly).toBe(true);
    expect(server.access?.modelControlOpen()).toBe(true);
    expect(await infer()).toBe(200);
    const text = await metricsText();
    for (const name of [
      "nv_inference_request_summary_us",
      "nv_inference_queue_summary_us",
      "nv_inference_compute_infer_summary_us",
    ]) {
      expect(text).toContain(`# TYPE ${name} summary`);
      for (const quantile of ["0.5", "0.9", "0.95", "0.99"])
        expect(text).toContain(`${name}{quantile="${quantile}",model="add_sub",version="1"}`);
      expect(text).toMatch(new RegExp(`${name}_count\\{model="add_sub",version="1"\\} [1-9]`));
    }

    ring.replaceAll([
      { id: "admin", hash: adminKey.hash, scopes: ["admin"], priorityLevel: 0, qpsQuota: null, expiresAt: null },
    ]);
    expect(server.access?.modelControlOpen()).toBe(false);
    const anonymous = await fetch(`${http}/v2/repository/models/add_sub/unload`, { method: "POST" });
    expect(anonymous.status).toBe(401);
    const unload = await fetch(`${http}/v2/repository/models/add_sub/unload`, {
      method: "POST",
      headers: { Authorization: `Bearer ${adminKey.key}` },
    });
    expect(unload.status).toBe(200);
    expect(ring.drainUsage().has("admin")).toBe(true);

    const after = await metricsText();
    expect(after).not.toMatch(/nv_inference_\w+\{[^}]*model="add_sub"/);
    expect(after).not.toMatch(/_summary_us\{[^}]*model="add_sub"/);
    expect((await fetch(`${http}/v2/operon/workers`)).status).toBe(401);
    expect((await workers(adminKey.key)).workers).toEqual([]);
  });
});
