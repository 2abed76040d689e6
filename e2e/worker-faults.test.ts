import { symlinkSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADD_SUB_CONFIG, addSubModel, IDENTITY_CONFIG, identityModel, writeModel } from "./support/model-fixtures.js";
import {
  EXAMPLE_REPOSITORY,
  processAlive,
  runOperon,
  startOperon,
  tempRepository,
  workerProcesses,
  type RunningOperon,
} from "./support/operon-process.js";

/**
 * What happens when processes die or are told to stop, through the real
 * `operon serve`: a backend worker killed under load, SIGTERM with requests
 * in flight, and the command line's own failures.
 *
 * Requests are made to be in flight deterministically by SIGSTOPping a
 * worker: the requests routed to it wait there until it is killed or
 * continued, with no timing guesses.
 */

interface Outcome {
  model: string;
  status: number;
  error: string | undefined;
  startedAt: number;
  endedAt: number;
}

function requestBody(model: string): string {
  if (model === "add_sub") {
    return JSON.stringify({
      inputs: [
        { name: "INPUT0", datatype: "FP32", shape: [1, 16], data: new Array(16).fill(2) },
        { name: "INPUT1", datatype: "FP32", shape: [1, 16], data: new Array(16).fill(1) },
      ],
    });
  }
  return JSON.stringify({ inputs: [{ name: "INPUT0", datatype: "FP32", shape: [1, 4], data: [1, 2, 3, 4] }] });
}

async function infer(server: RunningOperon, model: string): Promise<Outcome> {
  const startedAt = Date.now();
  try {
    const response = await fetch(`${server.httpUrl}/v2/models/${model}/infer`, {
      method: "POST",
      body: requestBody(model),
    });
    const body = (await response.json()) as { error?: string; outputs?: unknown[] };
    return { model, status: response.status, error: body.error, startedAt, endedAt: Date.now() };
  } catch (error) {
    // No HTTP answer at all (connection reset, bad body): status 0, so assertions show it.
    return { model, status: 0, error: String(error), startedAt, endedAt: Date.now() };
  }
}

/** Concurrent request loops (`concurrency` per model) until stop(); every outcome is kept. */
function loadLoop(server: RunningOperon, models: string[], concurrency: number) {
  const outcomes: Outcome[] = [];
  let running = true;
  const loop = async (model: string): Promise<void> => {
    while (running) outcomes.push(await infer(server, model));
  };
  const loops = models.flatMap((model) => Array.from({ length: concurrency }, () => loop(model)));
  return {
    outcomes,
    successes: (model: string, since = 0): number =>
      outcomes.filter((outcome) => outcome.model === model && outcome.status === 200 && outcome.startedAt >= since)
        .length,
    async stop(): Promise<Outcome[]> {
      running = false;
      await Promise.all(loops);
      return outcomes;
    },
  };
}

/** Polls until check returns a value other than undefined/false; bounded. */
async function waitFor<T>(
  what: string,
  check: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 15_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

function workerOf(server: RunningOperon, instance: string): number | undefined {
  return workerProcesses(server.pid).find((worker) => worker.instance === instance)?.pid;
}

async function metricsText(server: RunningOperon): Promise<string> {
  return (await fetch(server.metricsUrl)).text();
}

function gauge(text: string, name: string, model: string): number {
  const line = text.split("\n").find((row) => row.startsWith(`${name}{model="${model}",version="1"}`));
  return line === undefined ? 0 : Number(line.split(" ").pop());
}

describe("a backend worker killed under load", () => {
  let server: RunningOperon;
  beforeAll(async () => {
    const repository = tempRepository();
    writeModel(repository, "add_sub", addSubModel(), {
      config: ADD_SUB_CONFIG("add_sub", "instance_group [ { count: 2, kind: KIND_CPU } ]"),
    });
    writeModel(repository, "other", identityModel("FP32"), { config: IDENTITY_CONFIG("other") });
    writeModel(repository, "solo", identityModel("FP32"), {
      config: IDENTITY_CONFIG("solo", "instance_group [ { count: 1, kind: KIND_CPU } ]"),
    });
    server = await startOperon(["--model-repository", repository, "--backend-isolation", "process"]);
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("fails only the requests in flight on it (503, fast), restarts it, and serves everything again", async () => {
    const victim = workerOf(server, "add_sub_0_0")!;
    expect(victim).toBeDefined();
    expect(workerOf(server, "add_sub_0_1")).toBeDefined();

    const load = loadLoop(server, ["add_sub", "other"], 4); // 8 requests in flight
    let killedAt = 0;
    let restartedAt = 0;
    let frozen = false;
    try {
      await waitFor("traffic on both models", () => load.successes("add_sub") >= 20 && load.successes("other") >= 20);
      // Freeze the worker: the requests the scheduler hands it stay in flight there.
      process.kill(victim, "SIGSTOP");
      frozen = true;
      const frozenAt = Date.now();
      await waitFor("the other instance to carry add_sub alone", () => load.successes("add_sub", frozenAt) >= 20);
      killedAt = Date.now();
      process.kill(victim, "SIGKILL");
      frozen = false;

      const replacement = await waitFor("a new worker for add_sub_0_0", () => {
        const pid = workerOf(server, "add_sub_0_0");
        return pid !== undefined && pid !== victim ? pid : undefined;
      });
      expect(replacement).not.toBe(victim);
      await waitFor(
        "both add_sub workers up again",
        async () => gauge(await metricsText(server), "operon_worker_up", "add_sub") === 2,
      );
      restartedAt = Date.now();
      await waitFor(
        "traffic after the restart",
        () => load.successes("add_sub", restartedAt) >= 30 && load.successes("other", restartedAt) >= 30,
      );
    } finally {
      if (frozen) process.kill(victim, "SIGCONT");
      await load.stop();
    }

    const failures = load.outcomes.filter((outcome) => outcome.status !== 200);
    // The requests that sat on the frozen worker (at most its in-flight cap of 2), and nothing else.
    expect(failures.length).toBeGreaterThanOrEqual(1);
    expect(failures.length).toBeLessThanOrEqual(2);
    for (const failure of failures) {
      expect(failure.model).toBe("add_sub");
      expect(failure.status).toBe(503);
      expect(failure.error).toMatch(
        new RegExp(`worker for instance 'add_sub_0_0' \\(pid ${victim}\\) exited unexpectedly \\(signal SIGKILL\\)`),
      );
      expect(failure.startedAt).toBeLessThan(killedAt);
    }
    // Nothing hung: each request ended within a few seconds of when it could have (the freeze aside).
    for (const outcome of load.outcomes)
      expect(outcome.endedAt - Math.max(outcome.startedAt, killedAt)).toBeLessThan(10_000);
    // Everything sent after the kill succeeded, on both models.
    expect(load.outcomes.filter((outcome) => outcome.startedAt > killedAt && outcome.status !== 200)).toEqual([]);
    expect(load.outcomes.filter((outcome) => outcome.model === "other" && outcome.status !== 200)).toEqual([]);

    await server.waitForOutput(
      /"instance":"add_sub_0_0".*"msg":"backend worker exited unexpectedly; restarting it"/,
      5000,
    );
    await server.waitForOutput(/"instance":"add_sub_0_0".*"msg":"backend worker restarted"/, 5000);
    const metrics = await metricsText(server);
    expect(metrics).toMatch(/^operon_worker_restarts_total\{model="add_sub",version="1",instance="add_sub_0_0"\} 1$/m);
    expect(metrics).not.toMatch(/^operon_worker_restarts_total\{model="other"/m);
  });

  it("restarts the only instance of a model; requests meanwhile wait or fail with 503, never hang", async () => {
    const victim = workerOf(server, "solo_0_0")!;
    expect(victim).toBeDefined();
    const load = loadLoop(server, ["solo"], 4);
    let killedAt = 0;
    let replacedAt = 0;
    try {
      await waitFor("traffic on solo", () => load.successes("solo") >= 20);
      killedAt = Date.now();
      process.kill(victim, "SIGKILL");
      await waitFor("a new worker for solo_0", () => {
        const pid = workerOf(server, "solo_0_0");
        return pid !== undefined && pid !== victim;
      });
      replacedAt = Date.now();
      await waitFor("traffic after the restart", () => load.successes("solo", replacedAt) >= 20);
    } finally {
      await load.stop();
    }
    for (const outcome of load.outcomes) {
      expect(outcome.endedAt - Math.max(outcome.startedAt, killedAt)).toBeLessThan(10_000);
      if (outcome.status !== 200) {
        expect(outcome.status).toBe(503);
        expect(outcome.error).toMatch(/worker for instance 'solo_0_0' .* exited unexpectedly/);
      }
    }
    expect(load.outcomes.filter((outcome) => outcome.startedAt >= replacedAt && outcome.status !== 200)).toEqual([]);
    expect((await infer(server, "solo")).status).toBe(200);
    expect(await metricsText(server)).toMatch(
      /^operon_worker_restarts_total\{model="solo",version="1",instance="solo_0_0"\} 1$/m,
    );
  });
});

describe("SIGTERM", () => {
  let server: RunningOperon | undefined;
  afterAll(async () => {
    await server?.stop();
  });

  it("drains the requests in flight, exits 0 and leaves no worker behind", async () => {
    // Two of the example models: the MobileNetV3 classifier and add_sub (two workers).
    const repository = tempRepository();
    for (const model of ["text_direction_classifier", "add_sub"])
      symlinkSync(join(EXAMPLE_REPOSITORY, model), join(repository, model));
    server = await startOperon(["--model-repository", repository, "--backend-isolation", "process"]);
    const running = server;
    const workers = workerProcesses(running.pid);
    expect(workers.map((worker) => worker.instance)).toEqual([
      "add_sub_0_0",
      "add_sub_0_1",
      "text_direction_classifier_0_0",
    ]);
    const classifier = workers.find((worker) => worker.instance === "text_direction_classifier_0_0")!.pid;

    const image = JSON.stringify({
      inputs: [{ name: "x", datatype: "FP32", shape: [1, 3, 48, 192], data: new Array(3 * 48 * 192).fill(0.1) }],
    });
    const infer = async (): Promise<{ status: number; probabilities: number[] | undefined }> => {
      const response = await fetch(`${running.httpUrl}/v2/models/text_direction_classifier/infer`, {
        method: "POST",
        body: image,
      });
      const body = (await response.json()) as { outputs?: Array<{ data: number[] }> };
      return { status: response.status, probabilities: body.outputs?.[0]?.data };
    };

    // Hold the ten requests inside the server: the classifier's worker is frozen.
    process.kill(classifier, "SIGSTOP");
    let requests: Array<Promise<{ status: number; probabilities: number[] | undefined }>> = [];
    try {
      requests = Array.from({ length: 10 }, infer);
      await waitFor("all ten requests to be queued or executing", async () => {
        const text = await metricsText(running);
        return (
          gauge(text, "nv_inference_pending_request_count", "text_direction_classifier") +
            gauge(text, "operon_inference_executing_request_count", "text_direction_classifier") ===
          10
        );
      });
      running.process.kill("SIGTERM");
      await running.waitForOutput(/draining in-flight requests, then exiting/, 5000);
    } finally {
      process.kill(classifier, "SIGCONT");
    }

    const results = await Promise.all(requests);
    expect(results.map((result) => result.status)).toEqual(new Array(10).fill(200));
    for (const result of results) expect(result.probabilities![0]).toBeCloseTo(0.5065, 3);
    expect(await running.exited).toEqual({ code: 0, signal: null });
    await waitFor(
      "every worker process to be gone",
      () => workers.every((worker) => !processAlive(worker.pid)),
      10_000,
    );
  });
});

describe("the command line", () => {
  it("lists every flag in serve --help, with the loopback address default", async () => {
    const result = await runOperon(["serve", "--help"]);
    expect(result.code).toBe(0);
    for (const flag of [
      "--model-repository",
      "--http-port",
      "--grpc-port",
      "--metrics-port",
      "--model-control-mode",
      "--load-model",
      "--repository-poll-secs",
      "--strict-model-config",
      "--strict-readiness",
      "--exit-on-error",
      "--exit-timeout-secs",
      "--log-verbose",
      "--http-address",
      "--grpc-address",
    ]) {
      expect(result.stdout).toContain(flag);
    }
    expect(result.stdout).toMatch(/--http-address <address>[\s\S]*default 127\.0\.0\.1/);
    expect(result.stdout).toMatch(/--grpc-address <address>[\s\S]*\(default: "127\.0\.0\.1"[,)]/);
    // Each flag names the environment variable that sets it (issue 23).
    expect(result.stdout).toMatch(/--grpc-address <address>[\s\S]*env: OPERON_GRPC_ADDRESS\)/);
  });

  const FREE_PORTS = ["--http-port", "0", "--grpc-port", "0", "--metrics-port", "0"];
  const failures: Array<[string, string[], RegExp]> = [
    [
      "a port that is not a number",
      ["--model-repository", EXAMPLE_REPOSITORY, ...FREE_PORTS, "--http-port", "abc"],
      /--http-port.*'abc' is not a non-negative integer/,
    ],
    [
      "an unknown control mode",
      ["--model-repository", EXAMPLE_REPOSITORY, ...FREE_PORTS, "--model-control-mode", "bogus"],
      /--model-control-mode.*'bogus' is invalid.*none, poll, explicit/,
    ],
    ["no --model-repository", [...FREE_PORTS], /required option '--model-repository <path>' not specified/],
    [
      "a repository that does not exist",
      ["--model-repository", "/nonexistent/operon-models", ...FREE_PORTS],
      /model repository '\/nonexistent\/operon-models' does not exist/,
    ],
  ];
  for (const [what, args, message] of failures) {
    it(`exits non-zero on ${what}, saying so`, async () => {
      const result = await runOperon(["serve", ...args], 20_000);
      expect(result.code).not.toBe(0);
      expect(result.code).not.toBeNull();
      expect(result.stdout + result.stderr).toMatch(message);
      expect(result.stdout + result.stderr).not.toMatch(/^\s+at /m); // no stack trace
      expect(result.stderr).not.toMatch(/Operon HTTP on/);
    });
  }
});
