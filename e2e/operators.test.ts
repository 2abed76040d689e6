import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { grpcClient } from "./support/grpc-client.js";
import { float32Buffer, inferBinary, modelStats } from "./support/http-binary-client.js";
import { REPO_ROOT, startOperon, tempRepository, type RunningOperon } from "./support/operon-process.js";

/**
 * Operators through the real server: Triton ensembles of a model repository
 * served unchanged (HTTP and gRPC), a broken ensemble next to working ones,
 * and Operon operator specs with a route and an early exit registered at run
 * time through /v2/operators, with their statistics and per-step metrics.
 */
const ENSEMBLE_REPOSITORY = join(REPO_ROOT, "examples/ensemble_repository");

const range = (n: number, from = 0): number[] => Array.from({ length: n }, (_, i) => from + i);
const fromBuffer = (data: Buffer): number[] =>
  Array.from({ length: data.length / 4 }, (_, i) => data.readFloatLE(i * 4));

async function metric(server: RunningOperon, pattern: RegExp): Promise<number | undefined> {
  const text = await (await fetch(server.metricsUrl)).text();
  const row = text.split("\n").find((line) => pattern.test(line));
  return row === undefined ? undefined : Number(row.split(" ").pop());
}

async function index(
  server: RunningOperon,
): Promise<Array<{ name: string; version?: string; state?: string; reason?: string }>> {
  return (await fetch(`${server.httpUrl}/v2/repository/index`, { method: "POST" })).json() as Promise<never>;
}

async function jsonInfer(server: RunningOperon, model: string, body: object): Promise<{ status: number; body: any }> {
  const response = await fetch(`${server.httpUrl}/v2/models/${model}/infer`, {
    method: "POST",
    body: JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

describe("Triton ensembles from the model repository (real server)", () => {
  let server: RunningOperon;

  beforeAll(async () => {
    const broken = tempRepository("operon-e2e-ensembles-");
    // An ensemble whose step model exists nowhere: it must show UNAVAILABLE with the reason while the others serve.
    mkdirSync(join(broken, "broken_ensemble", "1"), { recursive: true });
    writeFileSync(
      join(broken, "broken_ensemble", "config.pbtxt"),
      `name: "broken_ensemble"
platform: "ensemble"
max_batch_size: 8
input [ { name: "IN", data_type: TYPE_FP32, dims: [ 16 ] } ]
output [ { name: "OUT", data_type: TYPE_FP32, dims: [ 16 ] } ]
ensemble_scheduling { step [ { model_name: "missing_model" model_version: -1 input_map { key: "x" value: "IN" } output_map { key: "y" value: "OUT" } } ] }
`,
    );
    // An ensemble wired with a datatype mismatch: INVALID_ARG naming the edge.
    mkdirSync(join(broken, "mistyped_ensemble", "1"), { recursive: true });
    writeFileSync(
      join(broken, "mistyped_ensemble", "config.pbtxt"),
      `name: "mistyped_ensemble"
platform: "ensemble"
max_batch_size: 8
input [ { name: "IN", data_type: TYPE_INT32, dims: [ 16 ] } ]
output [ { name: "OUT", data_type: TYPE_FP32, dims: [ 16 ] } ]
ensemble_scheduling { step [ { model_name: "preprocess" model_version: -1 input_map { key: "INPUT0" value: "IN" } output_map { key: "OUTPUT0" value: "OUT" } } ] }
`,
    );
    server = await startOperon([
      "--model-repository",
      ENSEMBLE_REPOSITORY,
      "--model-repository",
      broken,
      "--exit-on-error=false",
      "--strict-readiness=false",
    ]);
  });

  afterAll(async () => {
    await server?.stop();
  });

  it("serves the example ensemble unchanged over HTTP with the right numbers", async () => {
    const in0 = range(16, 1);
    const in1 = range(16, -4);
    const result = await inferBinary(server.httpUrl, "ensemble", [
      { name: "IN0", datatype: "FP32", shape: [1, 16], data: float32Buffer(in0) },
      { name: "IN1", datatype: "FP32", shape: [1, 16], data: float32Buffer(in1) },
    ]);
    expect(result.status).toBe(200);
    expect(result.outputs.map((o) => [o.name, o.datatype, o.shape])).toEqual([
      ["SUM", "FP32", [1, 16]],
      ["DIFF", "FP32", [1, 16]],
    ]);
    expect(fromBuffer(result.outputs[0]!.data)).toEqual(in0.map((v, i) => 2 * v + 2 * in1[i]!));
    expect(fromBuffer(result.outputs[1]!.data)).toEqual(in0.map((v, i) => 2 * v - 2 * in1[i]!));

    // JSON, a batch of 2, one output asked for.
    const json = await jsonInfer(server, "ensemble", {
      inputs: [
        { name: "IN0", datatype: "FP32", shape: [2, 16], data: [...range(16), ...range(16, 16)] },
        { name: "IN1", datatype: "FP32", shape: [2, 16], data: new Array(32).fill(1) },
      ],
      outputs: [{ name: "DIFF" }],
    });
    expect(json.status).toBe(200);
    expect(json.body.model_name).toBe("ensemble");
    expect(json.body.outputs.map((o: { name: string }) => o.name)).toEqual(["DIFF"]);
    expect(json.body.outputs[0].data).toEqual(range(32).map((v) => 2 * v - 2));
  });

  it("serves it over gRPC ModelInfer, with metadata and config of the ensemble", async () => {
    const client = grpcClient(server.grpcAddress);
    try {
      const in0 = range(16, 3);
      const in1 = range(16, 0).map((v) => v / 2);
      const response = await client.call("ModelInfer", {
        model_name: "ensemble",
        inputs: [
          { name: "IN0", datatype: "FP32", shape: [1, 16] },
          { name: "IN1", datatype: "FP32", shape: [1, 16] },
        ],
        raw_input_contents: [float32Buffer(in0), float32Buffer(in1)],
      });
      expect(response.model_name).toBe("ensemble");
      expect(response.outputs.map((o: { name: string }) => o.name)).toEqual(["SUM", "DIFF"]);
      expect(fromBuffer(response.raw_output_contents[0])).toEqual(in0.map((v, i) => 2 * v + 2 * in1[i]!));
      const metadata = await client.call("ModelMetadata", { name: "ensemble" });
      expect(metadata.platform).toBe("ensemble");
      expect(metadata.inputs.map((t: { name: string; shape: string[] }) => [t.name, t.shape.map(Number)])).toEqual([
        ["IN0", [-1, 16]],
        ["IN1", [-1, 16]],
      ]);
      const config = await client.call("ModelConfig", { name: "ensemble" });
      expect(config.config.platform).toBe("ensemble");
      expect(config.config.ensemble_scheduling.step.map((s: { model_name: string }) => s.model_name)).toEqual([
        "preprocess",
        "preprocess",
        "add_sub",
      ]);
    } finally {
      client.close();
    }
  });

  it("shows broken ensembles UNAVAILABLE with their reason while the others serve", async () => {
    const rows = await index(server);
    const row = (name: string) => rows.find((r) => r.name === name);
    expect(row("ensemble")).toMatchObject({ version: "1", state: "READY" });
    expect(row("preprocess")).toMatchObject({ state: "READY" });
    expect(row("broken_ensemble")).toMatchObject({ state: "UNAVAILABLE" });
    expect(row("broken_ensemble")!.reason).toContain(
      "ensemble 'broken_ensemble' cannot be served yet: step 'missing_model': model 'missing_model' is not served",
    );
    expect(row("mistyped_ensemble")).toMatchObject({ state: "UNAVAILABLE" });
    expect(row("mistyped_ensemble")!.reason).toContain(
      "tensor 'IN' from operator input 'IN' to step 'preprocess' (input 'INPUT0' of model 'preprocess'): datatype INT32 does not match FP32",
    );
    const response = await jsonInfer(server, "broken_ensemble", {
      inputs: [{ name: "IN", datatype: "FP32", shape: [1, 16], data: range(16) }],
    });
    expect(response.status).toBe(503);
    expect(response.body.error).toContain("missing_model");
  });

  it("reports statistics for the ensemble and its composing models, and per-step metrics", async () => {
    const before = await modelStats(server.httpUrl, "preprocess");
    const ensembleBefore = await modelStats(server.httpUrl, "ensemble");
    const stepBefore =
      (await metric(server, /^operon_operator_step_executions_total\{operator="ensemble",step="preprocess#2"\}/)) ?? 0;
    await inferBinary(server.httpUrl, "ensemble", [
      { name: "IN0", datatype: "FP32", shape: [1, 16], data: float32Buffer(1, 16) },
      { name: "IN1", datatype: "FP32", shape: [1, 16], data: float32Buffer(2, 16) },
    ]);
    const after = await modelStats(server.httpUrl, "preprocess");
    const ensembleAfter = await modelStats(server.httpUrl, "ensemble");
    // Each ensemble request runs preprocess twice (two steps).
    expect(after.inference_stats["success"]!.count - before.inference_stats["success"]!.count).toBe(2);
    expect(ensembleAfter.inference_stats["success"]!.count - ensembleBefore.inference_stats["success"]!.count).toBe(1);
    expect(ensembleAfter.inference_count - ensembleBefore.inference_count).toBe(1);
    expect(ensembleAfter.inference_stats["queue"]!.count).toBe(ensembleAfter.inference_stats["success"]!.count);

    expect(
      await metric(server, /^operon_operator_step_executions_total\{operator="ensemble",step="preprocess#2"\}/),
    ).toBe(stepBefore + 1);
    for (const step of ["preprocess", "preprocess#2", "add_sub"]) {
      expect(
        await metric(
          server,
          new RegExp(`^operon_operator_step_duration_us\\{operator="ensemble",step="${step.replace("#", "\\#")}"\\}`),
        ),
      ).toBeGreaterThan(0);
    }
    expect(await metric(server, /^nv_inference_request_success\{model="ensemble",version="1"\}/)).toBeGreaterThan(0);
  });

  it("lists ensembles as operators, and refuses registration outside explicit mode", async () => {
    const list = (await (await fetch(`${server.httpUrl}/v2/operators`)).json()) as {
      operators: Array<{ name: string; source: string; spec: any }>;
    };
    const ensemble = list.operators.find((operator) => operator.name === "ensemble")!;
    expect(ensemble.source).toBe("repository");
    expect(ensemble.spec.maxInflightPerStep).toBe(64);
    expect(ensemble.spec.steps.map((step: { id: string }) => step.id)).toEqual([
      "preprocess",
      "preprocess#2",
      "add_sub",
    ]);
    const refused = await fetch(`${server.httpUrl}/v2/operators/x`, { method: "POST", body: JSON.stringify({}) });
    expect(refused.status).toBe(501);
    expect(((await refused.json()) as { error: string }).error).toContain("--model-control-mode=explicit");
  });
});

describe("operators registered through /v2/operators (explicit mode, real server)", () => {
  let server: RunningOperon;

  /**
   * triage: an early exit when IN1[0] < 0 (answers IN1 itself); otherwise
   * preprocess IN0 (x2) and route on the result: first element > 10 -> add
   * IN1 (add_sub), else preprocess again (x2 once more).
   */
  const TRIAGE = {
    description: "exit, route and two branches",
    maxBatchSize: 8,
    inputs: [
      { name: "IN0", datatype: "FP32", dims: [16] },
      { name: "IN1", datatype: "FP32", dims: [16] },
    ],
    outputs: [{ name: "OUT", datatype: "FP32", dims: [16] }],
    steps: [
      { id: "negative", kind: "exit", input: "IN1", when: { lessThan: 0 }, outputs: { OUT: "IN1" } },
      { id: "pre", kind: "model", model: "preprocess", inputs: { INPUT0: "IN0" }, outputs: { OUTPUT0: "scaled" } },
      {
        id: "size",
        kind: "route",
        input: "scaled",
        cases: [{ when: { greaterThan: 10 }, next: ["big"] }],
        default: ["small"],
      },
      {
        id: "big",
        kind: "model",
        model: "add_sub",
        inputs: { INPUT0: "scaled", INPUT1: "IN1" },
        outputs: { OUTPUT0: "OUT" },
      },
      { id: "small", kind: "model", model: "preprocess", inputs: { INPUT0: "scaled" }, outputs: { OUTPUT0: "OUT" } },
    ],
  };

  const register = (name: string, spec: object) =>
    fetch(`${server.httpUrl}/v2/operators/${name}`, { method: "POST", body: JSON.stringify(spec) });

  const triage = (in0: number, in1: number) =>
    inferBinary(server.httpUrl, "triage", [
      { name: "IN0", datatype: "FP32", shape: [1, 16], data: float32Buffer(in0, 16) },
      { name: "IN1", datatype: "FP32", shape: [1, 16], data: float32Buffer(in1, 16) },
    ]);

  const steps = async (step: string) =>
    (await metric(
      server,
      new RegExp(`^operon_operator_step_executions_total\\{operator="triage",step="${step}"\\}`),
    )) ?? 0;

  beforeAll(async () => {
    server = await startOperon([
      "--model-repository",
      ENSEMBLE_REPOSITORY,
      "--model-control-mode",
      "explicit",
      "--load-model",
      "preprocess",
      "--load-model",
      "add_sub",
    ]);
  });

  afterAll(async () => {
    await server?.stop();
  });

  it("registers a spec with a route and an exit; it appears in the index and serves like a model", async () => {
    const response = await register("triage", TRIAGE);
    expect(response.status).toBe(200);
    expect(((await response.json()) as { name: string; source: string }).source).toBe("api");
    expect((await index(server)).find((row) => row.name === "triage")).toMatchObject({ version: "1", state: "READY" });
    const metadata = (await (await fetch(`${server.httpUrl}/v2/models/triage`)).json()) as any;
    expect(metadata).toMatchObject({ name: "triage", platform: "operator", versions: ["1"] });
    expect(metadata.outputs).toEqual([{ name: "OUT", datatype: "FP32", shape: [-1, 16] }]);
    const listed = (await (await fetch(`${server.httpUrl}/v2/operators/triage`)).json()) as {
      spec: { steps: unknown[] };
    };
    expect(listed.spec.steps).toHaveLength(5);
  });

  it("takes the big branch when the routed value is large", async () => {
    const smallBefore = await steps("small");
    const result = await triage(10, 1); // scaled 20 > 10 -> 20 + 1
    expect(result.status).toBe(200);
    expect(fromBuffer(result.outputs[0]!.data)).toEqual(new Array(16).fill(21));
    expect(await steps("big")).toBeGreaterThanOrEqual(1);
    expect(await steps("small")).toBe(smallBefore);
  });

  it("takes the small branch otherwise", async () => {
    const bigBefore = await steps("big");
    const result = await triage(1, 1); // scaled 2 -> x2 again
    expect(result.status).toBe(200);
    expect(fromBuffer(result.outputs[0]!.data)).toEqual(new Array(16).fill(4));
    expect(await steps("small")).toBeGreaterThanOrEqual(1);
    expect(await steps("big")).toBe(bigBefore);
  });

  it("answers each step's output and timing when asked (operon_step_outputs, operon_step_timings) over HTTP", async () => {
    const in0 = range(16, 3).map((v) => v / 4); // first element 0.75: scaled 1.5 -> the small branch
    const in1 = range(16, 1);
    const response = await jsonInfer(server, "triage", {
      parameters: { operon_step_outputs: true, operon_step_timings: true },
      inputs: [
        { name: "IN0", datatype: "FP32", shape: [1, 16], data: in0 },
        { name: "IN1", datatype: "FP32", shape: [1, 16], data: in1 },
      ],
    });
    expect(response.status).toBe(200);
    const stepOutputs = JSON.parse(String(response.body.parameters?.operon_step_outputs)) as Array<{
      step: string;
      outputs: any[];
    }>;
    // Model steps in spec order; the exit and the route have no entry, the skipped branch no tensors.
    expect(stepOutputs.map((entry) => [entry.step, entry.outputs.length])).toEqual([
      ["pre", 1],
      ["big", 0],
      ["small", 1],
    ]);
    // 'pre' shows what preprocess itself answers for IN0, under its name on the operator's board.
    const direct = await jsonInfer(server, "preprocess", {
      inputs: [{ name: "INPUT0", datatype: "FP32", shape: [1, 16], data: in0 }],
    });
    expect(stepOutputs[0]!.outputs).toEqual([
      { name: "scaled", datatype: "FP32", shape: [1, 16], data: direct.body.outputs[0].data },
    ]);
    expect(stepOutputs[2]!.outputs[0].data).toEqual(response.body.outputs[0].data);
    const timings = JSON.parse(String(response.body.parameters?.operon_step_timings)) as Array<{
      step: string;
      status: string;
    }>;
    expect(timings.map((step) => [step.step, step.status])).toEqual([
      ["negative", "ok"],
      ["pre", "ok"],
      ["size", "ok"],
      ["big", "skipped"],
      ["small", "ok"],
    ]);
  });

  it("exits early without starting the steps after the exit", async () => {
    const preBefore = await steps("pre");
    const preprocessBefore = (await modelStats(server.httpUrl, "preprocess")).inference_stats["success"]!.count;
    const result = await triage(5, -3);
    expect(result.status).toBe(200);
    expect(fromBuffer(result.outputs[0]!.data)).toEqual(new Array(16).fill(-3));
    expect(await steps("pre")).toBe(preBefore);
    expect(await steps("negative")).toBeGreaterThanOrEqual(3);
    expect((await modelStats(server.httpUrl, "preprocess")).inference_stats["success"]!.count).toBe(preprocessBefore);
  });

  it("keeps statistics for the operator itself", async () => {
    const stats = await modelStats(server.httpUrl, "triage");
    expect(stats.inference_stats["success"]!.count).toBeGreaterThanOrEqual(3);
    expect(stats.inference_count).toBeGreaterThanOrEqual(3);
  });

  it("serves it over gRPC too", async () => {
    const client = grpcClient(server.grpcAddress);
    try {
      const response = await client.call("ModelInfer", {
        model_name: "triage",
        inputs: [
          { name: "IN0", datatype: "FP32", shape: [1, 16] },
          { name: "IN1", datatype: "FP32", shape: [1, 16] },
        ],
        raw_input_contents: [float32Buffer(8, 16), float32Buffer(0.5, 16)],
        parameters: { operon_step_outputs: { bool_param: true } },
      });
      expect(fromBuffer(response.raw_output_contents[0])).toEqual(new Array(16).fill(16.5));
      // The step outputs travel as a string response parameter, as the step timings do.
      const stepOutputs = JSON.parse(response.parameters.operon_step_outputs.string_param) as Array<{
        step: string;
        outputs: Array<{ name: string; data: number[] }>;
      }>;
      expect(stepOutputs[0]).toEqual({
        step: "pre",
        outputs: [expect.objectContaining({ name: "scaled", data: new Array(16).fill(16) })],
      });
    } finally {
      client.close();
    }
  });

  it.each([
    [
      "a cycle",
      {
        ...TRIAGE,
        steps: [
          { id: "a", kind: "model", model: "preprocess", inputs: { INPUT0: "u" }, outputs: { OUTPUT0: "t" } },
          { id: "b", kind: "model", model: "preprocess", inputs: { INPUT0: "t" }, outputs: { OUTPUT0: "u" } },
          { id: "c", kind: "model", model: "preprocess", inputs: { INPUT0: "IN0" }, outputs: { OUTPUT0: "OUT" } },
        ],
      },
      "cycle: 'a' -(tensor 't')-> 'b' -(tensor 'u')-> 'a'",
    ],
    [
      "a datatype mismatch",
      { ...TRIAGE, inputs: [{ name: "IN0", datatype: "INT64", dims: [16] }, TRIAGE.inputs[1]] },
      "tensor 'IN0' from operator input 'IN0' to step 'pre' (input 'INPUT0' of model 'preprocess'): datatype INT64 does not match FP32",
    ],
    [
      "an unknown model",
      { ...TRIAGE, steps: [{ id: "m", kind: "model", model: "nope", inputs: { x: "IN0" }, outputs: { y: "OUT" } }] },
      "step 'm': model 'nope' is not served",
    ],
    [
      "a malformed document",
      { inputs: "x", steps: [] },
      "invalid operator spec 'bad': inputs: must be a non-empty array",
    ],
  ])("refuses %s with 400 naming the problem", async (_what, spec, expected) => {
    const response = await register("bad", spec);
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: string }).error).toContain(expected);
    expect((await index(server)).some((row) => row.name === "bad")).toBe(false);
  });

  it("refuses a name taken by a repository model, and an operator that calls itself", async () => {
    expect((await register("add_sub", TRIAGE)).status).toBe(400);
    await register("wrapper", {
      ...TRIAGE,
      steps: [
        { id: "inner", kind: "model", model: "triage", inputs: { IN0: "IN0", IN1: "IN1" }, outputs: { OUT: "OUT" } },
      ],
    });
    const loop = await register("triage", {
      ...TRIAGE,
      steps: [
        { id: "w", kind: "model", model: "wrapper", inputs: { IN0: "IN0", IN1: "IN1" }, outputs: { OUT: "OUT" } },
      ],
    });
    expect(loop.status).toBe(400);
    expect(((await loop.json()) as { error: string }).error).toContain(
      "operator 'triage' would call itself: 'triage' -> 'wrapper' -> 'triage'",
    );
    // The nested operator serves: wrapper -> triage -> models.
    const nested = await inferBinary(server.httpUrl, "wrapper", [
      { name: "IN0", datatype: "FP32", shape: [1, 16], data: float32Buffer(10, 16) },
      { name: "IN1", datatype: "FP32", shape: [1, 16], data: float32Buffer(1, 16) },
    ]);
    expect(fromBuffer(nested.outputs[0]!.data)).toEqual(new Array(16).fill(21));
    expect((await fetch(`${server.httpUrl}/v2/operators/wrapper`, { method: "DELETE" })).status).toBe(200);
  });

  it("says the operator is not ready, in the index and at /ready, while a step model is unloaded", async () => {
    const unload = await fetch(`${server.httpUrl}/v2/repository/models/add_sub/unload`, { method: "POST" });
    expect(unload.status).toBe(200);
    try {
      expect((await index(server)).find((row) => row.name === "triage")).toMatchObject({
        version: "1",
        state: "UNAVAILABLE",
        reason: "step model not ready: add_sub",
      });
      expect((await fetch(`${server.httpUrl}/v2/models/triage/ready`)).status).toBe(400);
      // Ready-only listings leave it out, as they leave out unloaded models.
      const ready = (await (
        await fetch(`${server.httpUrl}/v2/repository/index`, { method: "POST", body: JSON.stringify({ ready: true }) })
      ).json()) as Array<{ name: string }>;
      expect(ready.some((row) => row.name === "triage")).toBe(false);
    } finally {
      expect((await fetch(`${server.httpUrl}/v2/repository/models/add_sub/load`, { method: "POST" })).status).toBe(200);
    }
    expect((await index(server)).find((row) => row.name === "triage")).toMatchObject({ version: "1", state: "READY" });
    expect((await fetch(`${server.httpUrl}/v2/models/triage/ready`)).status).toBe(200);
  });

  it("unregisters with DELETE: gone from the index and from inference", async () => {
    expect((await fetch(`${server.httpUrl}/v2/operators/triage`, { method: "DELETE" })).status).toBe(200);
    expect((await index(server)).some((row) => row.name === "triage")).toBe(false);
    expect((await triage(1, 1)).status).toBe(404);
    expect(await metric(server, /^operon_operator_step_executions_total\{operator="triage"/)).toBeUndefined();
    expect((await fetch(`${server.httpUrl}/v2/operators/triage`, { method: "DELETE" })).status).toBe(404);
  });
});
