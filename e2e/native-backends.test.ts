import { copyFileSync, existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADD_SUB_CONFIG, addSubModel, writeModel } from "./support/model-fixtures.js";
import { grpcClient, PROTO_DIR } from "./support/grpc-client.js";
import {
  REPO_ROOT,
  startOperon,
  tempRepository,
  workerProcesses,
  type RunningOperon,
} from "./support/operon-process.js";

/**
 * Native backends (Triton's C++ backend API) through the real `operon
 * serve`: Operon's own test backends (native/backends, built by npm install
 * into native/build/tritonserver/backends, the default --backend-directory)
 * loaded from a model repository as Triton loads libtriton_<name>.so, served
 * over HTTP and gRPC from worker processes.
 */

/* eslint-disable @typescript-eslint/no-explicit-any */
const BACKENDS = join(REPO_ROOT, "native/build/tritonserver/backends");
const library = (name: string): string => join(BACKENDS, name, `libtriton_${name}.so`);

function identityConfig(name: string, extra = "", backend = "operon_identity"): string {
  return `
name: "${name}"
backend: "${backend}"
max_batch_size: 8
input [ { name: "INPUT0", data_type: TYPE_FP32, dims: [ 4 ] } ]
output [ { name: "OUTPUT0", data_type: TYPE_FP32, dims: [ 4 ] } ]
${extra}
`;
}

const parameter = (key: string, value: string): string =>
  `parameters { key: "${key}" value: { string_value: "${value}" } }`;

function writeNative(repository: string, name: string, config: string): string {
  const dir = join(repository, name);
  mkdirSync(join(dir, "1"), { recursive: true });
  writeFileSync(join(dir, "config.pbtxt"), config);
  return dir;
}

function buildRepository(): string {
  const repository = tempRepository("operon-e2e-native-");
  writeNative(
    repository,
    "identity_native",
    identityConfig("identity_native", "dynamic_batching { max_queue_delay_microseconds: 300000 }"),
  );
  writeNative(repository, "identity_plain", identityConfig("identity_plain"));
  writeNative(
    repository,
    "identity_large",
    identityConfig("identity_large").replaceAll("dims: [ 4 ]", "dims: [ 16384 ]"),
  );
  writeNative(
    repository,
    "repeat_native",
    identityConfig(
      "repeat_native",
      `model_transaction_policy { decoupled: true }\n${parameter("decoupled_repeat", "3")}`,
    ).replace("max_batch_size: 8", "max_batch_size: 0"),
  );
  writeNative(
    repository,
    "slow_repeat_native",
    identityConfig(
      "slow_repeat_native",
      `model_transaction_policy { decoupled: true }\n${parameter("decoupled_repeat", "200")}\n${parameter("repeat_delay_ms", "50")}`,
    ).replace("max_batch_size: 8", "max_batch_size: 0"),
  );
  writeNative(repository, "rejecting_native", identityConfig("rejecting_native", parameter("reject_config", "yes")));
  writeNative(repository, "crashing_native", identityConfig("crashing_native", parameter("crash_on_execute", "true")));
  writeNative(
    repository,
    "missing_symbol_native",
    identityConfig("missing_symbol_native", "", "operon_missing_execute"),
  );
  writeNative(repository, "wrong_api_native", identityConfig("wrong_api_native", "", "operon_wrong_api"));
  writeNative(repository, "unknown_native", identityConfig("unknown_native", "", "no_such_backend"));
  // Resolution order: the same backend name found in the version folder, the model folder and the backend directory.
  const probe = writeNative(repository, "order_probe", identityConfig("order_probe", "", "order_probe"));
  copyFileSync(library("operon_missing_execute"), join(probe, "1", "libtriton_order_probe.so"));
  copyFileSync(library("operon_identity"), join(probe, "libtriton_order_probe.so"));
  writeNative(repository, "from_backend_dir", identityConfig("from_backend_dir", "", "dir_probe"));
  writeModel(repository, "add_sub", addSubModel(), { config: ADD_SUB_CONFIG() });
  return repository;
}

let repository: string;
let backendDirectory: string;
let server: RunningOperon;
let inference: grpc.Client & Record<string, any>;

const INPUT = [1, 2, 3, 4];

async function inferHttp(model: string, data = INPUT): Promise<{ status: number; body: any }> {
  const response = await fetch(`${server.httpUrl}/v2/models/${model}/infer`, {
    method: "POST",
    body: JSON.stringify({ inputs: [{ name: "INPUT0", datatype: "FP32", shape: [1, 4], data }] }),
  });
  return { status: response.status, body: await response.json() };
}

async function load(model: string): Promise<{ status: number; error?: string }> {
  const response = await fetch(`${server.httpUrl}/v2/repository/models/${model}/load`, { method: "POST", body: "{}" });
  const body = (await response.json().catch(() => ({}))) as { error?: string };
  return { status: response.status, ...(body.error !== undefined ? { error: body.error } : {}) };
}

async function unload(model: string): Promise<number> {
  return (await fetch(`${server.httpUrl}/v2/repository/models/${model}/unload`, { method: "POST", body: "{}" })).status;
}

async function modelStats(model: string): Promise<any> {
  const response = await fetch(`${server.httpUrl}/v2/models/${model}/stats`);
  return ((await response.json()) as { model_stats: any[] }).model_stats[0];
}

async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 15_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

beforeAll(async () => {
  for (const name of ["operon_identity", "operon_missing_execute", "operon_wrong_api"]) {
    if (!existsSync(library(name)))
      throw new Error(`${library(name)} is missing: native backends were not built (npm install builds them)`);
  }
  repository = buildRepository();
  backendDirectory = tempRepository("operon-e2e-backend-dir-");
  // --backend-directory replaces the default one: Operon's built backends go there too.
  for (const name of ["operon_identity", "operon_missing_execute", "operon_wrong_api"]) {
    mkdirSync(join(backendDirectory, name));
    copyFileSync(library(name), join(backendDirectory, name, `libtriton_${name}.so`));
  }
  mkdirSync(join(backendDirectory, "dir_probe"));
  copyFileSync(library("operon_identity"), join(backendDirectory, "dir_probe", "libtriton_dir_probe.so"));
  mkdirSync(join(backendDirectory, "order_probe"));
  copyFileSync(library("operon_missing_execute"), join(backendDirectory, "order_probe", "libtriton_order_probe.so"));
  server = await startOperon([
    "--model-repository",
    repository,
    "--model-control-mode",
    "explicit",
    "--backend-directory",
    backendDirectory,
    "--exit-on-error=false",
    ...[
      "identity_native",
      "identity_plain",
      "identity_large",
      "repeat_native",
      "slow_repeat_native",
      "add_sub",
    ].flatMap((name) => ["--load-model", name]),
  ]);
  const definition = protoLoader.loadSync(join(PROTO_DIR, "grpc_service.proto"), {
    keepCase: true,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
    includeDirs: [PROTO_DIR],
  });
  const loaded = grpc.loadPackageDefinition(definition) as any;
  inference = new loaded.inference.GRPCInferenceService(server.grpcAddress, grpc.credentials.createInsecure());
}, 120_000);

afterAll(async () => {
  inference?.close();
  await server?.stop();
  if (repository !== undefined) rmSync(repository, { recursive: true, force: true });
  if (backendDirectory !== undefined) rmSync(backendDirectory, { recursive: true, force: true });
});

describe("a native backend served from a model repository", () => {
  it("answers over HTTP with the backend's outputs and its response parameters, from a worker process", async () => {
    const { status, body } = await inferHttp("identity_plain", [5, 6, 7, 8]);
    expect(status).toBe(200);
    expect(body.outputs).toEqual([{ name: "OUTPUT0", datatype: "FP32", shape: [1, 4], data: [5, 6, 7, 8] }]);
    expect(body.parameters.batch_requests).toBe(1);
    expect(workerProcesses(server.pid).some((worker) => worker.instance.startsWith("identity_plain"))).toBe(true);
    // The backend's TRITONSERVER_LogMessage records reach Operon's log, with the backend's name.
    await server.waitForOutput(
      /"backend":"operon_identity".*TRITONBACKEND_Initialize: operon_identity|TRITONBACKEND_Initialize: operon_identity.*"backend":"operon_identity"/,
      5000,
    );
  });

  it("answers over gRPC ModelInfer", async () => {
    const client = grpcClient(server.grpcAddress);
    try {
      const response = await client.call("ModelInfer", {
        model_name: "identity_plain",
        inputs: [{ name: "INPUT0", datatype: "FP32", shape: [1, 4], contents: { fp32_contents: [9, 8, 7, 6] } }],
      });
      expect(response.outputs[0].name).toBe("OUTPUT0");
      expect(response.outputs[0].shape).toEqual(["1", "4"]);
      const raw: Buffer = response.raw_output_contents[0];
      expect([...new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.length))]).toEqual([
        9, 8, 7, 6,
      ]);
    } finally {
      client.close();
    }
  });

  it("carries 64 KiB tensors through the worker's shared memory both ways, bytes intact", async () => {
    const data = Array.from({ length: 16384 }, (_, i) => (i % 1000) / 8);
    const response = await fetch(`${server.httpUrl}/v2/models/identity_large/infer`, {
      method: "POST",
      body: JSON.stringify({ inputs: [{ name: "INPUT0", datatype: "FP32", shape: [1, 16384], data }] }),
    });
    expect(response.status).toBe(200);
    expect(((await response.json()) as any).outputs[0].data).toEqual(data);
  });

  it("hands a batching backend both requests of a batch in one execute", async () => {
    const [first, second] = await Promise.all([
      inferHttp("identity_native", [1, 1, 1, 1]),
      inferHttp("identity_native", [2, 2, 2, 2]),
    ]);
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(first.body.outputs[0].data).toEqual([1, 1, 1, 1]);
    expect(second.body.outputs[0].data).toEqual([2, 2, 2, 2]);
    // The backend says how many requests its TRITONBACKEND_ModelInstanceExecute saw.
    expect([first.body.parameters.batch_requests, second.body.parameters.batch_requests]).toEqual([2, 2]);
  });

  it("streams a decoupled backend's responses over gRPC, then its final flag", async () => {
    const stream = inference["ModelStreamInfer"]() as grpc.ClientDuplexStream<object, any>;
    const replies: any[] = [];
    const status = new Promise<grpc.StatusObject>((resolve, reject) => {
      stream.on("data", (reply: any) => replies.push(reply));
      stream.on("status", resolve);
      stream.on("error", reject);
    });
    stream.write({
      model_name: "repeat_native",
      id: "r1",
      parameters: { triton_enable_empty_final_response: { bool_param: true } },
      inputs: [{ name: "INPUT0", datatype: "FP32", shape: [4], contents: { fp32_contents: INPUT } }],
    });
    stream.end();
    expect((await status).code).toBe(grpc.status.OK);
    expect(replies.map((reply) => reply.error_message)).toEqual(["", "", "", ""]);
    const finals = replies.map((reply) => reply.infer_response.parameters.triton_final_response.bool_param);
    expect(finals).toEqual([false, false, false, true]);
    expect(replies.slice(0, 3).every((reply) => reply.infer_response.raw_output_contents.length === 1)).toBe(true);
    // The backend's response parameters travel with each streamed response.
    expect(replies.slice(0, 3).map((reply) => Number(reply.infer_response.parameters.index.int64_param))).toEqual([
      0, 1, 2,
    ]);
    expect(replies[3].infer_response.raw_output_contents).toEqual([]);
  });

  it("tells a decoupled backend that the client cancelled: it stops streaming early", async () => {
    const before = await modelStats("slow_repeat_native");
    const stream = inference["ModelStreamInfer"]() as grpc.ClientDuplexStream<object, any>;
    const firstReply = new Promise<void>((resolve) => stream.once("data", () => resolve()));
    stream.on("error", () => undefined);
    stream.write({
      model_name: "slow_repeat_native",
      id: "c1",
      inputs: [{ name: "INPUT0", datatype: "FP32", shape: [4], contents: { fp32_contents: INPUT } }],
    });
    await firstReply;
    const cancelledAt = Date.now();
    stream.cancel();
    // 200 responses 50 ms apart take 10 s; the request ends (as a failure) soon after the cancel only if the backend learned of it.
    await waitFor(
      "the cancelled request to end",
      async () =>
        Number((await modelStats("slow_repeat_native")).inference_stats.fail.count) >
        Number(before.inference_stats.fail.count),
      5000,
    );
    expect(Date.now() - cancelledAt).toBeLessThan(3000);
  });

  it("reports the backend's statistics and its custom metric family on /metrics", async () => {
    for (let i = 0; i < 3; i += 1) expect((await inferHttp("identity_plain")).status).toBe(200);
    const metrics = await waitFor("the backend's custom metric", async () => {
      const text = await (await fetch(server.metricsUrl)).text();
      return /operon_identity_executed_requests\{model="identity_plain"\} ([0-9]+)/.exec(text) !== null &&
        Number(/operon_identity_executed_requests\{model="identity_plain"\} ([0-9]+)/.exec(text)![1]) >= 4
        ? text
        : undefined;
    });
    expect(metrics).toContain("# TYPE operon_identity_executed_requests counter");
    const count = /nv_inference_count\{model="identity_plain",version="1"\} ([0-9]+)/.exec(metrics);
    expect(Number(count?.[1])).toBeGreaterThanOrEqual(4);
    // Compute time comes from the backend's TRITONBACKEND_ModelInstanceReportStatistics.
    const stats = await modelStats("identity_plain");
    expect(Number(stats.inference_stats.compute_infer.ns)).toBeGreaterThan(0);
  });
});

describe("loading and refusing native backends", () => {
  it("unloads and reloads a native model", async () => {
    expect(await unload("identity_plain")).toBe(200);
    expect((await inferHttp("identity_plain")).status).not.toBe(200);
    expect((await load("identity_plain")).status).toBe(200);
    expect((await inferHttp("identity_plain", [4, 3, 2, 1])).body.outputs[0].data).toEqual([4, 3, 2, 1]);
  });

  it("shows a backend's own config validation error (ModelInitialize) in the load error", async () => {
    const { status, error } = await load("rejecting_native");
    expect(status).toBe(400);
    expect(error).toMatch(/operon_identity/);
    expect(error).toMatch(/reject_config/);
  });

  it("refuses a library without TRITONBACKEND_ModelInstanceExecute and one of another API major, saying so", async () => {
    const missing = await load("missing_symbol_native");
    expect(missing.status).not.toBe(200);
    expect(missing.error).toMatch(/TRITONBACKEND_ModelInstanceExecute/);
    const wrong = await load("wrong_api_native");
    expect(wrong.status).not.toBe(200);
    expect(wrong.error).toMatch(/built for TRITONBACKEND API 2\.0, the server implements 1\.\d+/);
  });

  it("looks in the version folder, then the model folder, then --backend-directory; not found names every place", async () => {
    const probe = join(repository, "order_probe");
    // Version folder: the missing-symbol backend; model folder: identity; backend directory: the missing-symbol backend again.
    const inVersion = await load("order_probe");
    expect(inVersion.error).toMatch(/libtriton_order_probe\.so does not export TRITONBACKEND_ModelInstanceExecute/);
    rmSync(join(probe, "1", "libtriton_order_probe.so"));
    expect((await load("order_probe")).status).toBe(200);
    expect((await inferHttp("order_probe")).body.outputs[0].data).toEqual(INPUT);

    expect((await load("from_backend_dir")).status).toBe(200);
    expect((await inferHttp("from_backend_dir")).body.outputs[0].data).toEqual(INPUT);

    const unknown = await load("unknown_native");
    expect(unknown.status).toBe(404);
    expect(unknown.error).toContain("the version folder (unknown_native/1/libtriton_no_such_backend.so)");
    expect(unknown.error).toContain("the model folder (unknown_native/libtriton_no_such_backend.so)");
    expect(unknown.error).toMatch(
      /the backend directory \([^)]*\/libtriton_no_such_backend\.so; set it with --backend-directory\)/,
    );
  });

  it("a backend that crashes takes down its worker only: it restarts, other models keep serving", async () => {
    expect((await load("crashing_native")).status).toBe(200);
    const pidsBefore = workerProcesses(server.pid)
      .filter((worker) => worker.instance.startsWith("crashing_native"))
      .map((worker) => worker.pid);
    expect(pidsBefore.length).toBe(1);
    const crashed = await inferHttp("crashing_native");
    expect(crashed.status).toBe(503);
    expect(crashed.body.error).toMatch(/exited unexpectedly \(signal SIGSEGV\)/);
    // The other models' workers were not touched.
    expect((await inferHttp("identity_plain")).status).toBe(200);
    const restarted = await waitFor("the crashed worker to restart", () => {
      const pids = workerProcesses(server.pid)
        .filter((worker) => worker.instance.startsWith("crashing_native"))
        .map((worker) => worker.pid);
      return pids.length === 1 && pids[0] !== pidsBefore[0] ? pids[0] : undefined;
    });
    expect(restarted).toBeGreaterThan(0);
    expect(await fetch(`${server.httpUrl}/v2/models/crashing_native/ready`).then((response) => response.status)).toBe(
      200,
    );
  });
});
