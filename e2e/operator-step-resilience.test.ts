import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startOperon, tempRepository, type RunningOperon } from "./support/operon-process.js";

/**
 * Operator steps that survive a failing model (issue 25), through the real
 * server: a step whose model fails twice with UNAVAILABLE is retried
 * transparently; a circuit breaker opens after repeated failures (the
 * fallback answers without calling the model), turns half-open and closes
 * on a good probe, with its state in /metrics; a fallback model; bad specs
 * are refused naming the field. Models fail on demand through request
 * parameters, which an operator passes on to every step.
 */
function tsModel(repository: string, name: string, source: string): void {
  mkdirSync(join(repository, name, "1"), { recursive: true });
  writeFileSync(join(repository, name, "1", "model.js"), source);
  writeFileSync(
    join(repository, name, "config.pbtxt"),
    `name: "${name}"
backend: "typescript"
max_batch_size: 0
input [ { name: "IN", data_type: TYPE_FP32, dims: [ 1 ] } ]
output [ { name: "OUT", data_type: TYPE_FP32, dims: [ 1 ] } ]
`,
  );
}

// Fails with UNAVAILABLE the first `fail_times` calls made with parameter `key`, then echoes IN.
const FLAKY = `const seen = new Map();
export default class {
  execute(requests, ctx) {
    return requests.map((request) => {
      const key = String(request.parameters.key ?? "");
      const calls = (seen.get(key) ?? 0) + 1;
      seen.set(key, calls);
      if (calls <= Number(request.parameters.fail_times ?? 0)) return ctx.error("UNAVAILABLE", "flaky: call " + calls + " of key " + key + " refused");
      return { outputs: [request.input("IN").rename("OUT")] };
    });
  }
}`;

// INTERNAL while parameter mode is "fail", else echoes IN.
const SICK = `export default class {
  execute(requests, ctx) {
    return requests.map((request) =>
      request.parameters.mode === "fail"
        ? ctx.error("INTERNAL", "sick: asked to fail")
        : { outputs: [request.input("IN").rename("OUT")] });
  }
}`;

// Answers 10 × IN.
const BACKUP = `export default class {
  execute(requests, ctx) {
    return requests.map((request) => ({ outputs: [ctx.tensor.float32("OUT", [1], [request.input("IN").toFloat32Array()[0] * 10])] }));
  }
}`;

const IO = {
  inputs: [{ name: "IN", datatype: "FP32", dims: [1] }],
  outputs: [{ name: "OUT", datatype: "FP32", dims: [1] }],
};
const modelStep = (model: string, extra: object = {}) => ({
  id: "main",
  kind: "model",
  model,
  inputs: { IN: "IN" },
  outputs: { OUT: "OUT" },
  ...extra,
});
// Open for 3 s: long enough that a loaded host still sees it open between the checks, short for the half-open wait.
const BREAKER = { failureThreshold: 2, windowMs: 60_000, openMs: 3000 };

async function register(server: RunningOperon, name: string, spec: object): Promise<{ status: number; text: string }> {
  const response = await fetch(`${server.httpUrl}/v2/operators/${name}`, {
    method: "POST",
    body: JSON.stringify(spec),
  });
  return { status: response.status, text: await response.text() };
}

async function infer(
  server: RunningOperon,
  model: string,
  value: number,
  parameters: Record<string, unknown> = {},
): Promise<{
  status: number;
  value: number | undefined;
  error: string | undefined;
  parameters: Record<string, unknown>;
}> {
  const response = await fetch(`${server.httpUrl}/v2/models/${model}/infer`, {
    method: "POST",
    body: JSON.stringify({ parameters, inputs: [{ name: "IN", datatype: "FP32", shape: [1], data: [value] }] }),
  });
  const body = (await response.json()) as {
    outputs?: Array<{ data: number[] }>;
    error?: string;
    parameters?: Record<string, unknown>;
  };
  return {
    status: response.status,
    value: body.outputs?.[0]?.data[0],
    error: body.error,
    parameters: body.parameters ?? {},
  };
}

async function metric(server: RunningOperon, prefix: string): Promise<number | undefined> {
  const text = await (await fetch(server.metricsUrl)).text();
  const line = text.split("\n").find((row) => row.startsWith(prefix));
  return line === undefined ? undefined : Number(line.split(" ").pop());
}

async function modelExecutions(server: RunningOperon, model: string): Promise<number> {
  return (await metric(server, `nv_inference_exec_count{model="${model}",version="1"}`)) ?? 0;
}

describe("operator steps that survive a failing model (real server)", () => {
  let server: RunningOperon;

  beforeAll(async () => {
    const repository = tempRepository();
    tsModel(repository, "flaky", FLAKY);
    tsModel(repository, "sick", SICK);
    tsModel(repository, "backup", BACKUP);
    server = await startOperon([
      "--model-repository",
      repository,
      "--model-control-mode",
      "explicit",
      "--load-model",
      "*",
    ]);
    const specs: Record<string, object> = {
      retrying: {
        ...IO,
        steps: [modelStep("flaky", { retry: { maxAttempts: 3, initialBackoffMs: 5, maxBackoffMs: 20 } })],
      },
      unretried: { ...IO, steps: [modelStep("flaky")] },
      guarded: {
        ...IO,
        steps: [
          modelStep("sick", {
            circuitBreaker: BREAKER,
            fallback: { outputs: { OUT: { datatype: "FP32", shape: [1], data: [-1] } } },
          }),
        ],
      },
      bare: { ...IO, steps: [modelStep("sick", { circuitBreaker: BREAKER })] },
      backed: { ...IO, steps: [modelStep("sick", { fallback: { model: "backup" } })] },
    };
    for (const [name, spec] of Object.entries(specs)) {
      const registered = await register(server, name, spec);
      expect(registered.status, registered.text).toBe(200);
    }
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
  });

  it("retries a step that fails twice with UNAVAILABLE, transparently; without retry the same failure fails the request", async () => {
    const result = await infer(server, "retrying", 7, { key: "a", fail_times: 2, operon_step_timings: true });
    expect(result.status, result.error).toBe(200);
    expect(result.value).toBe(7);
    const [timing] = JSON.parse(String(result.parameters["operon_step_timings"])) as Array<{
      attempts?: number;
      status: string;
    }>;
    expect(timing).toMatchObject({ status: "ok", attempts: 3 });
    expect(await metric(server, 'operon_operator_step_retries_total{operator="retrying",step="main"}')).toBe(2);

    // Three failures: the third attempt's error is the answer.
    const exhausted = await infer(server, "retrying", 7, { key: "b", fail_times: 3 });
    expect(exhausted.status).toBe(503);
    expect(exhausted.error).toMatch(
      /operator 'retrying' step 'main' \(model 'flaky'\) failed: flaky: call 3 of key b refused/,
    );

    const plain = await infer(server, "unretried", 7, { key: "c", fail_times: 1 });
    expect(plain.status).toBe(503);
    expect(plain.error).toMatch(/call 1 of key c refused/);
    // Steps without a circuitBreaker list none.
    const served = (await (await fetch(`${server.httpUrl}/v2/operators/unretried`)).json()) as { breakers: unknown[] };
    expect(served.breakers).toEqual([]);
  });

  it("opens the breaker after repeated failures, answers with the fallback without calling the model, then closes on a good probe", async () => {
    const metricState = () => metric(server, 'operon_operator_step_circuit_state{operator="guarded",step="main"}');
    // The gateway's admin API (GET /v2/operators/<name>: breakers, what the console's operator page shows) says
    // the same as /metrics at every step.
    const STATES = ["closed", "open", "half-open"] as const;
    const state = async (): Promise<number | undefined> => {
      const [fromMetrics, served] = await Promise.all([
        metricState(),
        fetch(`${server.httpUrl}/v2/operators/guarded`).then(
          (response) => response.json() as Promise<{ breakers: Array<{ step: string; state: string }> }>,
        ),
      ]);
      expect(served.breakers).toEqual([{ step: "main", state: STATES[fromMetrics!] }]);
      return fromMetrics;
    };
    expect(await state()).toBe(0);
    // Two failures: each answered by the default output; the second opens the breaker.
    for (let i = 0; i < 2; i += 1) {
      const failed = await infer(server, "guarded", 3, { mode: "fail" });
      expect([failed.status, failed.value]).toEqual([200, -1]);
    }
    expect(await state()).toBe(1);
    const executions = await modelExecutions(server, "sick");
    // Open: even a good request gets the fallback, and the model is not called.
    const shortCircuited = await infer(server, "guarded", 3);
    expect([shortCircuited.status, shortCircuited.value]).toEqual([200, -1]);
    expect(await modelExecutions(server, "sick")).toBe(executions);
    expect(
      await metric(server, 'operon_operator_step_fallbacks_total{operator="guarded",step="main",kind="default"}'),
    ).toBe(3);

    // After openMs it turns half-open by itself; a good probe closes it.
    const deadline = Date.now() + 10_000;
    while ((await metricState()) !== 2 && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 25));
    expect(await state()).toBe(2);
    const probe = await infer(server, "guarded", 3);
    expect([probe.status, probe.value]).toEqual([200, 3]);
    expect(await state()).toBe(0);
    expect(await modelExecutions(server, "sick")).toBe(executions + 1);
  });

  it("without a fallback, an open breaker fails fast with UNAVAILABLE naming the step", async () => {
    for (let i = 0; i < 2; i += 1) expect((await infer(server, "bare", 1, { mode: "fail" })).status).toBe(500);
    const executions = await modelExecutions(server, "sick");
    const refused = await infer(server, "bare", 1);
    expect(refused.status).toBe(503);
    expect(refused.error).toMatch(/circuit breaker of step 'main' is open after repeated failures of model 'sick'/);
    expect(await modelExecutions(server, "sick")).toBe(executions);
    // Each operator's step has its own breaker: 'guarded' is unaffected.
    expect((await infer(server, "guarded", 4)).value).toBe(4);
  });

  it("a fallback model answers when the step's model fails; a client's bad request is not covered up", async () => {
    const rescued = await infer(server, "backed", 2, { mode: "fail" });
    expect([rescued.status, rescued.value]).toEqual([200, 20]);
    expect((await infer(server, "backed", 2)).value).toBe(2);
    const bad = await fetch(`${server.httpUrl}/v2/models/backed/infer`, {
      method: "POST",
      body: JSON.stringify({ inputs: [{ name: "IN", datatype: "INT32", shape: [1], data: [1] }] }),
    });
    expect(bad.status).toBe(400);
  });

  it("refuses specs with bad resilience fields, naming the field", async () => {
    const cases: Array<[object, RegExp]> = [
      [{ retry: { maxAttempts: 0 } }, /step 'main': retry: maxAttempts must be an integer >= 1 and <= 10/],
      [{ circuitBreaker: { threshold: 2 } }, /circuitBreaker: unknown field\(s\) 'threshold'/],
      [{ fallback: { model: "nowhere" } }, /step 'main': fallback model 'nowhere' is not served/],
      [
        { fallback: { outputs: { OUT: { datatype: "INT32", shape: [1], data: [0] } } } },
        /fallback outputs: 'OUT' is INT32, but model 'sick' answers FP32/,
      ],
    ];
    for (const [extra, message] of cases) {
      const refused = await register(server, "refused", { ...IO, steps: [modelStep("sick", extra)] });
      expect(refused.status, refused.text).toBeGreaterThanOrEqual(400);
      expect(refused.text).toMatch(message);
    }
  });
});
