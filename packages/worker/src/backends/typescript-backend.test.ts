import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { parsePbtxt } from "@operon/model-config/pbtxt-parser";
import { DATATYPES, type DataType } from "@operon/protocol/datatypes";
import { OperonError } from "@operon/protocol/errors";
import { type Tensor, encodeBytesElements } from "@operon/protocol/tensor";
import type {
  BackendHost,
  BackendRequest,
  BackendResponse,
  BlsCall,
  BlsOutcome,
  ExecuteGuardOptions,
} from "@operon/backend-api/backend";
import { createBackend } from "./registry.js";
import { TypeScriptBackend } from "./typescript-backend.js";
import { type TypedTensor, tensor, typedTensor } from "@operon/backend-api/typescript-model-api";
import { importModelModule } from "./typescript-model-loader.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..");
const EXAMPLES = path.join(ROOT, "examples/model_repository");
const repo = mkdtempSync(path.join(os.tmpdir(), "operon-ts-backend-"));
afterAll(() => rmSync(repo, { recursive: true, force: true }));

/** Writes <repo>/<model>/<version>/<file> and returns its path. */
function modelFile(model: string, file: string, source: string, version = "1"): string {
  const dir = path.join(repo, model, version);
  mkdirSync(dir, { recursive: true });
  const target = path.join(dir, file);
  writeFileSync(target, source);
  return target;
}

interface Logged {
  level: string;
  message: string;
  fields: Record<string, unknown> | undefined;
}

interface FakeHost extends BackendHost {
  calls: BlsCall[];
  guards: ExecuteGuardOptions[];
  armed: number[][];
  disarmed: number;
}

function fakeHost(answer: (call: BlsCall) => Promise<BlsOutcome> = async () => ({ outputs: [] })): FakeHost {
  const host: FakeHost = {
    calls: [],
    guards: [],
    armed: [],
    disarmed: 0,
    infer: (call) => {
      host.calls.push(call);
      return answer(call);
    },
    createExecuteGuard: async (options) => {
      host.guards.push(options);
      return {
        arm: (ids) => {
          host.armed.push([...ids]);
          return () => void (host.disarmed += 1);
        },
        close: () => undefined,
      };
    },
  };
  return host;
}

async function load(
  modelPath: string,
  config: Record<string, unknown> = {},
  options: { parameters?: Record<string, string>; host?: BackendHost; logs?: Logged[] } = {},
): Promise<TypeScriptBackend> {
  const backend = new TypeScriptBackend();
  await backend.initialize({
    modelPath,
    config,
    instanceName: `${String(config.name ?? "model")}_0`,
    parameters: options.parameters ?? {},
    log: (level, message, fields) => void options.logs?.push({ level, message, fields }),
    ...(options.host !== undefined ? { host: options.host } : {}),
  });
  return backend;
}

interface Recorded extends BackendRequest {
  responses: Array<{ response: BackendResponse; final: boolean }>;
  /** Resolves at the final response. */
  done: Promise<void>;
}

let nextRequestId = 1;
function request(
  inputs: Tensor[],
  extra: Partial<Pick<BackendRequest, "id" | "outputNames" | "parameters">> = {},
): Recorded {
  let finish!: () => void;
  const responses: Recorded["responses"] = [];
  return {
    requestId: nextRequestId++,
    id: extra.id ?? "",
    inputs,
    outputNames: extra.outputNames ?? [],
    parameters: extra.parameters ?? {},
    cancelled: false,
    responses,
    done: new Promise<void>((resolve) => (finish = resolve)),
    respond(response, final) {
      responses.push({ response, final });
      if (final) finish();
    },
  };
}

function bytes(name: string, strings: string[], shape = [strings.length]): Tensor {
  return { name, datatype: "BYTES", shape, data: encodeBytesElements(strings) };
}

function int32(name: string, values: number[], shape = [values.length]): Tensor {
  return { name, datatype: "INT32", shape, data: Buffer.from(new Int32Array(values).buffer) };
}

function outputsOf(recorded: Recorded, index = 0): Map<string, TypedTensor> {
  const entry = recorded.responses[index];
  expect(entry).toBeDefined();
  const response = entry!.response;
  if ("error" in response) throw new Error(`expected outputs, got ${response.error.kind}: ${response.error.message}`);
  return new Map(response.outputs.map((output) => [output.name, typedTensor(output)]));
}

function errorOf(recorded: Recorded, index = 0): OperonError {
  const response = recorded.responses[index]?.response;
  expect(response).toBeDefined();
  if (response === undefined || !("error" in response)) throw new Error("expected an error response");
  expect(response.error).toBeInstanceOf(OperonError);
  return response.error;
}

async function loadFailure(promise: Promise<unknown>): Promise<OperonError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(OperonError);
    return error as OperonError;
  }
  throw new Error("expected a rejection");
}

const TEXT_CONFIG = {
  name: "strings",
  max_batch_size: 4,
  input: [{ name: "TEXT", data_type: "TYPE_STRING", dims: [1] }],
  output: [
    { name: "UPPER", data_type: "TYPE_STRING", dims: [1] },
    { name: "LEN", data_type: "TYPE_INT32", dims: [1] },
  ],
  parameters: { greeting: { string_value: "hi" }, overridden: { string_value: "config" } },
};

describe("TypeScriptBackend lifecycle", () => {
  it("loads a model.js class, calls initialize with the right args, reports config metadata, finalizes", async () => {
    const modelPath = modelFile(
      "strings",
      "model.js",
      `export default class {
  async initialize(args) {
    globalThis.__initArgs = { ...args, log: typeof args.log, tensor: typeof args.tensor.float32 };
    args.log("info", "hello from the model", { answer: 42 });
    this.greeting = args.parameters.greeting;
  }
  execute(requests, ctx) {
    return requests.map((request) => {
      const text = request.input("TEXT");
      const strings = text.toStrings();
      return { outputs: [
        ctx.tensor.bytes("UPPER", text.shape, strings.map((s) => this.greeting + " " + s.toUpperCase())),
        ctx.tensor.int32("LEN", text.shape, strings.map((s) => s.length)),
      ] };
    });
  }
  finalize() { globalThis.__finalized = true; }
}
`,
    );
    const logs: Logged[] = [];
    const host = fakeHost();
    const backend = await load(modelPath, TEXT_CONFIG, { parameters: { overridden: "load" }, host, logs });
    const args = (globalThis as { __initArgs?: Record<string, unknown> }).__initArgs;
    expect(args).toMatchObject({
      config: TEXT_CONFIG,
      parameters: { greeting: "hi", overridden: "load" },
      modelName: "strings",
      instanceName: "strings_0",
      instanceKind: "KIND_CPU",
      modelDir: path.join(repo, "strings"),
      modelVersion: "1",
      log: "function",
      tensor: "function",
    });
    expect(logs).toContainEqual({
      level: "info",
      message: "hello from the model",
      fields: { model: "strings", answer: 42 },
    });
    expect(backend.metadata()).toEqual({
      inputs: [{ name: "TEXT", datatype: "BYTES", shape: [-1, 1] }],
      outputs: [
        { name: "UPPER", datatype: "BYTES", shape: [-1, 1] },
        { name: "LEN", datatype: "INT32", shape: [-1, 1] },
      ],
    });
    expect(backend.decoupled).toBe(false);
    expect(backend.maxBatchSize).toBe(4);
    expect(host.guards).toEqual([
      { timeoutMs: 30_000, message: "model 'strings' execute timed out after 30000 ms", decoupled: false },
    ]);

    // The plain Backend contract: one request.
    const single = await backend.execute([bytes("TEXT", ["ab"], [1, 1])], ["LEN"]);
    expect(single.outputs.map((output) => [output.name, Array.from(typedTensor(output).toInt32Array())])).toEqual([
      ["LEN", [2]],
    ]);
    expect(single.timing.computeInferNs).toBeGreaterThan(0);
    expect(host.armed).toHaveLength(1);
    expect(host.disarmed).toBe(1);

    await backend.finalize();
    expect((globalThis as { __finalized?: boolean }).__finalized).toBe(true);
  });

  it("loads model.ts: transpiled, relative and package imports resolved from the model's folder, errors at .ts lines", async () => {
    modelFile("typed", "helper.js", `export const shout = (s) => s.toUpperCase() + "!";\n`);
    const pkg = path.join(repo, "typed", "1", "node_modules", "fake-suffix");
    mkdirSync(pkg, { recursive: true });
    writeFileSync(path.join(pkg, "package.json"), JSON.stringify({ name: "fake-suffix", main: "index.js" }));
    writeFileSync(path.join(pkg, "index.js"), `module.exports = { suffix: "?" };\n`);
    const modelPath = modelFile(
      "typed",
      "model.ts",
      `import type { ExecuteContext, TypedRequest, TypedResponse } from "@operon/worker/backends/typescript-model-api";
import { shout } from "./helper.js";
import fake from "fake-suffix";

interface Options { prefix: string }

export class Model {
  private options: Options = { prefix: ">" };
  execute(requests: TypedRequest[], ctx: ExecuteContext): Array<TypedResponse | Error> {
    return requests.map((request): TypedResponse | Error => {
      const words: string[] = request.input("TEXT").toStrings();
      if (words[0] === "explode") throw new Error("exploded on purpose");
      return { outputs: [ctx.tensor.bytes("UPPER", [words.length], words.map((w) => this.options.prefix + shout(w) + fake.suffix))] };
    });
  }
}
export const where = [import.meta.url, import.meta.filename, import.meta.dirname];
`,
    );
    const backend = await load(modelPath, { name: "typed" });
    // The module knows where it came from, not where it was transpiled to.
    expect((await importModelModule(modelPath)).where).toEqual([
      pathToFileURL(modelPath).href,
      modelPath,
      path.dirname(modelPath),
    ]);
    const ok = request([bytes("TEXT", ["hey", "you"])]);
    const bad = request([bytes("TEXT", ["explode"])]);
    await backend.executeRequests([ok]);
    expect(outputsOf(ok).get("UPPER")!.toStrings()).toEqual([">HEY!?", ">YOU!?"]);
    await backend.executeRequests([bad]);
    const error = errorOf(bad);
    expect(error.kind).toBe("INTERNAL");
    expect(error.message).toBe("model 'typed' execute failed: exploded on purpose");
    // The stack trace points into model.ts (source map), not the temporary .mjs.
    expect(String((error.cause as Error).stack)).toContain(`${modelPath}:12:`);
  });

  it("names the file and line of load failures", async () => {
    const syntax = modelFile("bad_js", "model.js", `export default class {\n  execute() {\n    return [;\n  }\n}\n`);
    const jsError = await loadFailure(load(syntax));
    expect(jsError.kind).toBe("INVALID_ARG");
    expect(jsError.message).toContain(`failed to load model file '${syntax}'`);
    expect(jsError.message).toContain(`${syntax}:3:13`);

    const tsSyntax = modelFile("bad_ts", "model.ts", `const n: number = 1;\nlet x = ;\nexport default class {}\n`);
    const tsError = await loadFailure(load(tsSyntax));
    expect(tsError.kind).toBe("INVALID_ARG");
    expect(tsError.message).toBe(`model file '${tsSyntax}' does not compile: ${tsSyntax}:2:9: Expression expected.`);

    const throws = modelFile("throws_at_load", "model.mjs", `const a = 1;\nthrow new Error("no config for " + a);\n`);
    const thrown = await loadFailure(load(throws));
    expect(thrown.message).toBe(`failed to load model file '${throws}': no config for 1 (at ${throws}:2:7)`);

    const noClass = modelFile("no_class", "model.js", `export const notAModel = 1;\n`);
    expect((await loadFailure(load(noClass))).message).toContain(
      "must default-export a class (or export one named Model) with an execute(requests, ctx) method",
    );

    const missing = path.join(repo, "nowhere", "1", "model.js");
    expect((await loadFailure(load(missing))).message).toContain(`model file '${missing}' not found`);

    const initFails = modelFile(
      "init_fails",
      "model.js",
      `export default class {\n  initialize() { throw Object.assign(new Error("no GPU here"), { kind: "UNAVAILABLE" }); }\n  execute() { return []; }\n}\n`,
    );
    const unavailable = await loadFailure(load(initFails));
    expect([unavailable.kind, unavailable.message]).toEqual(["UNAVAILABLE", "no GPU here"]);
    const initFailsPlain = modelFile(
      "init_fails_plain",
      "model.js",
      `export default class {\n  initialize() { throw new Error("bad weights"); }\n  execute() { return []; }\n}\n`,
    );
    const invalid = await loadFailure(load(initFailsPlain, { name: "init_fails_plain" }));
    expect([invalid.kind, invalid.message]).toEqual([
      "INVALID_ARG",
      "model 'init_fails_plain' initialize failed: bad weights",
    ]);

    const badTimeout = modelFile("bad_timeout", "model.js", `export default class { execute() { return []; } }\n`);
    const timeoutError = await loadFailure(
      load(badTimeout, { name: "bad_timeout" }, { parameters: { execute_timeout_ms: "soon" } }),
    );
    expect(timeoutError.message).toBe(
      "model 'bad_timeout': parameter 'execute_timeout_ms' must be a positive integer (milliseconds), got 'soon'",
    );
  });

  it("is registered as backend 'typescript'", async () => {
    expect(await createBackend("typescript")).toBeInstanceOf(TypeScriptBackend);
  });
});

describe("TypeScriptBackend batched execute", () => {
  const source = `export default class {
  execute(requests, ctx) {
    globalThis.__batchSizes = [...(globalThis.__batchSizes ?? []), requests.length];
    if (requests.some((r) => r.parameters.fail === "all")) throw ctx.error("INVALID_ARG", "the whole batch is refused");
    if (requests.some((r) => r.parameters.fail === "plain")) throw new TypeError("x is not a function");
    if (requests.some((r) => r.parameters.fail === "count")) return [];
    if (requests.some((r) => r.parameters.fail === "shape")) return requests.map(() => ({ outputs: [{ name: "LEN", datatype: "INT32", shape: [3], data: Buffer.alloc(4) }] }));
    return requests.map((request) => {
      if (request.parameters.fail === "mine") return ctx.error("INVALID_ARG", "request " + request.id + " is refused");
      if (request.parameters.fail === "mine-plain") return new Error("cannot serve " + request.id);
      const strings = request.input("TEXT").toStrings();
      return { outputs: [
        ctx.tensor.bytes("UPPER", [strings.length, 1], strings.map((s) => s.toUpperCase())),
        ctx.tensor.int32("LEN", [strings.length, 1], strings.map((s) => s.length)),
      ] };
    });
  }
}
`;

  it("answers every request of a batch in order; an Error fails only its request", async () => {
    const backend = await load(modelFile("batched", "model.js", source), { ...TEXT_CONFIG, name: "batched" });
    const a = request([bytes("TEXT", ["one", "two"], [2, 1])], { id: "a" });
    const b = request([bytes("TEXT", ["three"], [1, 1])], { id: "b", parameters: { fail: "mine" } });
    const c = request([bytes("TEXT", ["four"], [1, 1])], { id: "c", outputNames: ["LEN"] });
    const d = request([bytes("TEXT", ["five"], [1, 1])], { id: "d", parameters: { fail: "mine-plain" } });
    await backend.executeRequests([a, b, c, d]);
    expect((globalThis as { __batchSizes?: number[] }).__batchSizes).toEqual([4]);
    for (const r of [a, b, c, d]) expect(r.responses.map((entry) => entry.final)).toEqual([true]);
    expect(outputsOf(a).get("UPPER")!.toStrings()).toEqual(["ONE", "TWO"]);
    expect(outputsOf(a).get("UPPER")!.shape).toEqual([2, 1]);
    expect(Array.from(outputsOf(a).get("LEN")!.toInt32Array())).toEqual([3, 3]);
    expect([errorOf(b).kind, errorOf(b).message]).toEqual(["INVALID_ARG", "request b is refused"]);
    expect([...outputsOf(c).keys()]).toEqual(["LEN"]);
    expect([errorOf(d).kind, errorOf(d).message]).toEqual([
      "INTERNAL",
      "model 'batched' request failed: cannot serve d",
    ]);
    const timing = (a.responses[0]!.response as { timing?: { computeInferNs: number } }).timing;
    expect(timing?.computeInferNs).toBeGreaterThan(0);
  });

  it("fails every request of the call when execute throws or returns a malformed result", async () => {
    const logs: Logged[] = [];
    const backend = await load(
      modelFile("batched_errors", "model.js", source),
      { ...TEXT_CONFIG, name: "batched_errors" },
      { logs },
    );
    const cases: Array<[string, string, string]> = [
      ["all", "INVALID_ARG", "the whole batch is refused"],
      ["plain", "INTERNAL", "model 'batched_errors' execute failed: x is not a function"],
      [
        "count",
        "INTERNAL",
        "model 'batched_errors' execute returned 0 responses for 2 request(s); it must return one response (or Error) per request, in order",
      ],
      ["shape", "INTERNAL", "model 'batched_errors' output: tensor 'LEN': shape [3] of INT32 needs 12 bytes, got 4"],
    ];
    for (const [fail, kind, message] of cases) {
      const first = request([bytes("TEXT", ["x"], [1, 1])]);
      const second = request([bytes("TEXT", ["y"], [1, 1])], { parameters: { fail } });
      await backend.executeRequests([first, second]);
      for (const r of [first, second]) {
        expect(r.responses).toHaveLength(1);
        expect([errorOf(r).kind, errorOf(r).message]).toEqual([kind, message]);
      }
    }
    // Model faults are logged with the stack; a refused request is not an error of the server.
    expect(
      logs.find((line) => line.message === "model execute failed" && line.level === "error")?.fields?.stack,
    ).toContain("TypeError: x is not a function");
    expect(logs.find((line) => line.message === "model execute failed" && line.level === "info")?.fields?.reason).toBe(
      "the whole batch is refused",
    );
  });

  it("rejects a request for an output the model does not declare, and a missing requested output", async () => {
    const backend = await load(modelFile("outputs", "model.js", source), { ...TEXT_CONFIG, name: "outputs" });
    const unknown = request([bytes("TEXT", ["x"], [1, 1])], { outputNames: ["NOPE"] });
    await backend.executeRequests([unknown]);
    expect([errorOf(unknown).kind, errorOf(unknown).message]).toEqual([
      "INVALID_ARG",
      "unexpected inference output 'NOPE' for model 'outputs'",
    ]);

    const undeclared = await load(modelFile("outputs_undeclared", "model.js", source), { name: "outputs_undeclared" });
    const missing = request([bytes("TEXT", ["x"], [1, 1])], { outputNames: ["NOPE"] });
    await undeclared.executeRequests([missing]);
    expect([errorOf(missing).kind, errorOf(missing).message]).toEqual([
      "INTERNAL",
      "model 'outputs_undeclared' did not produce the requested output 'NOPE'",
    ]);
  });

  it("uses the request's own sender only when decoupled", async () => {
    const backend = await load(
      modelFile(
        "not_decoupled",
        "model.js",
        `export default class { execute(requests) { return requests.map((r) => { try { r.sender.send(undefined, { final: true }); } catch (e) { return e; } }); } }\n`,
      ),
      { name: "not_decoupled" },
    );
    const r = request([]);
    await backend.executeRequests([r]);
    expect(errorOf(r).message).toContain("model 'not_decoupled' is not decoupled: return its responses from execute()");
  });
});

describe("TypeScriptBackend decoupled", () => {
  const DECOUPLED = {
    name: "streamer",
    model_transaction_policy: { decoupled: true },
    parameters: { decoupled_final_timeout_ms: { string_value: "300" } },
  };
  const source = `export default class {
  execute(requests, ctx) {
    for (const request of requests) {
      const mode = request.parameters.mode;
      if (mode === "throw") throw ctx.error("UNAVAILABLE", "backend busy");
      if (mode === "three") void this.three(request, ctx);
      if (mode === "forget") request.sender.send({ outputs: [ctx.tensor.int32("N", [1], [0])] });
      if (mode === "late") setTimeout(() => this.late(request, ctx), 600);
    }
  }
  async three(request, ctx) {
    for (let i = 1; i <= 3; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      request.sender.send({ outputs: [ctx.tensor.int32("N", [1], [i])] });
    }
    request.sender.send(undefined, { final: true });
    try {
      request.sender.send({ outputs: [ctx.tensor.int32("N", [1], [4])] });
    } catch (error) {
      globalThis.__afterFinal = error.message;
    }
  }
  late(request, ctx) {
    try {
      request.sender.send({ outputs: [ctx.tensor.int32("N", [1], [99])] });
    } catch (error) {
      globalThis.__late = error.message;
    }
  }
}
`;

  it("streams three responses and a final flag; send after final throws in the model", async () => {
    const backend = await load(modelFile("streamer", "model.js", source), DECOUPLED);
    expect(backend.decoupled).toBe(true);
    const r = request([], { parameters: { mode: "three" } });
    await backend.executeRequests([r]);
    // execute returned at once: the stream goes on without it.
    expect(r.responses).toEqual([]);
    await r.done;
    expect(r.responses.map((entry) => entry.final)).toEqual([false, false, false, true]);
    expect([0, 1, 2].map((i) => outputsOf(r, i).get("N")!.toNumbers()[0])).toEqual([1, 2, 3]);
    expect(r.responses[3]!.response).toEqual({ outputs: [] });
    expect((globalThis as { __afterFinal?: string }).__afterFinal).toBe(
      `model 'streamer': request ${r.requestId} already sent its final response; send() after it is a bug in the model`,
    );
    await backend.finalize();
  });

  it("ends a request whose model never sends the final response after decoupled_final_timeout_ms, logging it", async () => {
    const logs: Logged[] = [];
    const backend = await load(
      modelFile("forgetful", "model.js", source),
      { ...DECOUPLED, name: "forgetful" },
      { logs },
    );
    const r = request([], { id: "abc", parameters: { mode: "forget" } });
    const started = performance.now();
    await backend.executeRequests([r]);
    await r.done;
    const waited = performance.now() - started;
    expect(waited).toBeGreaterThanOrEqual(280);
    expect(waited).toBeLessThan(2000);
    expect(r.responses.map((entry) => entry.final)).toEqual([false, true]);
    const error = errorOf(r, 1);
    expect(error.kind).toBe("INTERNAL");
    expect(error.message).toBe(
      `model 'forgetful' did not send the final response for request ${r.requestId} (id 'abc') within 300 ms`,
    );
    expect(logs).toContainEqual({
      level: "error",
      message: "model did not send the final response; ending the request",
      fields: { model: "forgetful", wireRequestId: r.requestId, id: "abc", timeoutMs: 300 },
    });
  });

  it("a model that wakes up after the timeout cannot send any more; finalize waits for open streams", async () => {
    const backend = await load(modelFile("late", "model.js", source), { ...DECOUPLED, name: "late" });
    const r = request([], { parameters: { mode: "late" } });
    await backend.executeRequests([r]);
    const finalized = backend.finalize();
    await r.done;
    await finalized;
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(r.responses).toHaveLength(1);
    expect(errorOf(r).message).toContain("did not send the final response");
    expect((globalThis as { __late?: string }).__late).toContain("already sent its final response");
  });

  it("fails every open stream of the call when execute throws", async () => {
    const backend = await load(modelFile("throwing_streamer", "model.js", source), {
      ...DECOUPLED,
      name: "throwing_streamer",
    });
    const a = request([], { parameters: { mode: "forget" } });
    const b = request([], { parameters: { mode: "throw" } });
    await backend.executeRequests([a, b]);
    expect(a.responses.map((entry) => entry.final)).toEqual([false, true]);
    expect(errorOf(a, 1).kind).toBe("UNAVAILABLE");
    expect(b.responses).toHaveLength(1);
    expect([errorOf(b).kind, errorOf(b).message]).toEqual(["UNAVAILABLE", "backend busy"]);
    await expect(backend.execute([])).rejects.toThrow(/is decoupled/);
  });
});

describe("TypeScriptBackend BLS (ctx.infer)", () => {
  const source = `export default class {
  async execute(requests, ctx) {
    const x = ctx.tensor.float32("X", [2], [1, 2]);
    const [ok, failed, bad] = await Promise.all([
      ctx.infer("doubler", [x], { outputs: ["Y"], parameters: { p: 1 } }),
      ctx.infer("missing", [x], { version: "3" }),
      ctx.infer("doubler", [{ name: "Z", datatype: "FP32", shape: [3], data: Buffer.alloc(4) }]),
    ]);
    globalThis.__bls = { failed, bad: bad.error };
    return requests.map(() => ({ outputs: [ok.outputs.get("Y")] }));
  }
}
`;

  it("runs calls concurrently through the host and returns failures as values", async () => {
    let concurrent = 0;
    let peak = 0;
    const host = fakeHost(async (call) => {
      concurrent += 1;
      peak = Math.max(peak, concurrent);
      await new Promise((resolve) => setTimeout(resolve, 20));
      concurrent -= 1;
      if (call.model === "missing")
        return { error: new OperonError("NOT_FOUND", "model 'missing' version 3 is not available") };
      const values = typedTensor(call.inputs[0]!).toNumbers();
      return {
        outputs: [
          tensor.float32(
            "Y",
            [values.length],
            values.map((v) => 2 * v),
          ),
        ],
      };
    });
    const backend = await load(modelFile("caller", "model.js", source), { name: "caller" }, { host });
    const r = request([]);
    await backend.executeRequests([r]);
    expect(Array.from(outputsOf(r).get("Y")!.toFloat32Array())).toEqual([2, 4]);
    expect(peak).toBe(2);
    expect(host.calls.map((call) => [call.model, call.version, call.outputNames, call.parameters])).toEqual([
      ["doubler", undefined, ["Y"], { p: 1 }],
      ["missing", "3", undefined, undefined],
    ]);
    expect((globalThis as { __bls?: unknown }).__bls).toEqual({
      failed: { error: { kind: "NOT_FOUND", message: "model 'missing' version 3 is not available" } },
      bad: { kind: "INVALID_ARG", message: "infer('doubler'): tensor 'Z': shape [3] of FP32 needs 12 bytes, got 4" },
    });
  });

  it("without a host, infer answers UNAVAILABLE", async () => {
    const backend = await load(
      modelFile(
        "lonely",
        "model.js",
        `export default class { async execute(requests, ctx) { const r = await ctx.infer("x", []); return requests.map(() => r.error); } }\n`,
      ),
      { name: "lonely" },
    );
    const r = request([]);
    await backend.executeRequests([r]);
    // A plain { kind, message } value returned as a response is not an Error: the model must return Errors.
    expect(errorOf(r).message).toContain("a response is { outputs: [tensors] } or an Error");
    const direct = await load(
      modelFile(
        "lonely2",
        "model.js",
        `export default class { async execute(requests, ctx) { const r = await ctx.infer("x", []); return requests.map(() => ctx.error(r.error.kind, r.error.message)); } }\n`,
      ),
      { name: "lonely2" },
    );
    const r2 = request([]);
    await direct.executeRequests([r2]);
    expect([errorOf(r2).kind, errorOf(r2).message]).toEqual([
      "UNAVAILABLE",
      "BLS is not available: this backend does not run in a worker process",
    ]);
  });
});

describe("typed tensor helpers", () => {
  const samples: Record<
    DataType,
    { values: unknown[]; make: (name: string, shape: number[]) => TypedTensor; read: (t: TypedTensor) => unknown[] }
  > = {
    BOOL: {
      values: [true, false, true],
      make: (n, s) => tensor.bool(n, s, [true, false, true]),
      read: (t) => t.toBooleans(),
    },
    UINT8: {
      values: [0, 7, 255],
      make: (n, s) => tensor.uint8(n, s, [0, 7, 255]),
      read: (t) => Array.from(t.toUint8Array()),
    },
    UINT16: {
      values: [0, 513, 65535],
      make: (n, s) => tensor.uint16(n, s, [0, 513, 65535]),
      read: (t) => Array.from(t.toUint16Array()),
    },
    UINT32: {
      values: [0, 70000, 4294967295],
      make: (n, s) => tensor.uint32(n, s, [0, 70000, 4294967295]),
      read: (t) => Array.from(t.toUint32Array()),
    },
    UINT64: {
      values: [0n, 1n, 18446744073709551615n],
      make: (n, s) => tensor.uint64(n, s, [0n, 1, 18446744073709551615n]),
      read: (t) => Array.from(t.toBigUint64Array()),
    },
    INT8: {
      values: [-128, 0, 127],
      make: (n, s) => tensor.int8(n, s, [-128, 0, 127]),
      read: (t) => Array.from(t.toInt8Array()),
    },
    INT16: {
      values: [-32768, 1, 32767],
      make: (n, s) => tensor.int16(n, s, [-32768, 1, 32767]),
      read: (t) => Array.from(t.toInt16Array()),
    },
    INT32: {
      values: [-2147483648, 5, 2147483647],
      make: (n, s) => tensor.int32(n, s, [-2147483648, 5, 2147483647]),
      read: (t) => Array.from(t.toInt32Array()),
    },
    INT64: {
      values: [-9223372036854775808n, 3n, 9223372036854775807n],
      make: (n, s) => tensor.int64(n, s, [-9223372036854775808n, 3, 9223372036854775807n]),
      read: (t) => Array.from(t.toBigInt64Array()),
    },
    FP16: {
      values: [0.5, -2, 65504],
      make: (n, s) => tensor.float16(n, s, [0.5, -2, 65504]),
      read: (t) => Array.from(t.toFloat32Array()),
    },
    FP32: {
      values: [1.5, -0.25, 3.4028234663852886e38],
      make: (n, s) => tensor.float32(n, s, [1.5, -0.25, 3.4028234663852886e38]),
      read: (t) => Array.from(t.toFloat32Array()),
    },
    FP64: {
      values: [Math.PI, -1e300, 0],
      make: (n, s) => tensor.float64(n, s, [Math.PI, -1e300, 0]),
      read: (t) => Array.from(t.toFloat64Array()),
    },
    BYTES: {
      values: ["héllo", "", "wörld"],
      make: (n, s) => tensor.bytes(n, s, ["héllo", Buffer.alloc(0), "wörld"]),
      read: (t) => t.toStrings(),
    },
    BF16: {
      values: [1, -2.5, 256],
      make: (n, s) => tensor.bfloat16(n, s, [1, -2.5, 256]),
      read: (t) => Array.from(t.toFloat32Array()),
    },
  };

  it("round-trips every datatype: factory -> bytes -> re-wrapped (aligned and misaligned) -> values", () => {
    expect(Object.keys(samples).sort()).toEqual([...DATATYPES].sort());
    for (const datatype of DATATYPES) {
      const sample = samples[datatype];
      const made = sample.make(`T_${datatype}`, [3]);
      expect(made.datatype).toBe(datatype);
      expect(made.shape).toEqual([3]);
      expect(made.size).toBe(3);
      expect(sample.read(made)).toEqual(sample.values);
      // Through the wire: the bytes alone, at an odd offset (as in a frame), give the same values.
      const shifted = Buffer.alloc(made.data.length + 1);
      made.data.copy(shifted, 1);
      const rewrapped = tensor.raw(made.name, datatype, [3], shifted.subarray(1));
      expect(sample.read(rewrapped)).toEqual(sample.values);
      if (datatype !== "BYTES") {
        expect(rewrapped.toNumbers()).toEqual(sample.values.map((value) => Number(value)));
        expect(() => rewrapped.toStrings()).toThrow(`tensor 'T_${datatype}' is ${datatype}, not BYTES`);
      }
    }
  });

  it("views aligned data without copying; fromTypedArray picks or reinterprets the datatype", () => {
    const f32 = tensor.float32("F", [2, 2], [1, 2, 3, 4]);
    const view = f32.toFloat32Array();
    view[0] = 9;
    expect(f32.data.readFloatLE(0)).toBe(9);
    expect(tensor.fromTypedArray("I", [2], new Int32Array([7, 8])).datatype).toBe("INT32");
    expect(tensor.fromTypedArray("B", [2], new Uint8Array([1, 0]), "BOOL").toBooleans()).toEqual([true, false]);
    const halfBits = tensor.float16("H", [1], [1.5]).toUint16Array();
    expect(tensor.fromTypedArray("H2", [1], halfBits, "FP16").toNumbers()).toEqual([1.5]);
    expect(() => tensor.fromTypedArray("X", [1], new Float32Array([1]), "INT64")).toThrow(
      "a Float32Array cannot hold INT64",
    );
  });

  it("checks shapes, datatypes and byte sizes with messages naming the tensor", () => {
    expect(() => tensor.float32("F", [2, 2], [1, 2, 3])).toThrow(
      "tensor 'F': shape [2,2] holds 4 elements, got 3 values",
    );
    expect(() => tensor.int32("I", [-1], [])).toThrow("tensor 'I': shape must be a list of non-negative integers");
    expect(() => tensor.float32("F", [1], [1]).toInt32Array()).toThrow("tensor 'F' is FP32, not INT32");
    expect(() => typedTensor({ name: "Q", datatype: "FP99" as DataType, shape: [1], data: Buffer.alloc(4) })).toThrow(
      "tensor 'Q': unknown datatype 'FP99'",
    );
    expect(() => tensor.raw("S", "BYTES", [2], encodeBytesElements(["a"]))).toThrow(
      "tensor 'S': shape [2] holds 2 BYTES elements, got 1",
    );
    expect(tensor.float32("S", [], [5]).size).toBe(1);
    expect(tensor.bytes("E", [0], []).data.length).toBe(0);
    expect(tensor.float16("R", [2], [1 + 2 ** -11, 1e-8]).toNumbers()).toEqual([1, 0]);
  });
});

describe("the shipped TypeScript-backend examples", () => {
  function exampleConfig(model: string): Record<string, unknown> {
    const file = path.join(EXAMPLES, model, "config.pbtxt");
    return parsePbtxt(readFileSync(file, "utf8"), file) as Record<string, unknown>;
  }

  it("text_generator streams the prompt's words reversed, then done, then the final flag", async () => {
    const config = exampleConfig("text_generator");
    const backend = await load(path.join(EXAMPLES, "text_generator/1/model.js"), config, {
      parameters: { token_delay_ms: "0" },
    });
    expect(backend.decoupled).toBe(true);
    expect(backend.metadata().inputs.map((input) => [input.name, input.datatype, input.shape])).toEqual([
      ["text_input", "BYTES", [1]],
      ["max_tokens", "INT32", [1]],
    ]);
    const all = request([bytes("text_input", ["the quick  brown fox"])]);
    const capped = request([bytes("text_input", ["one two three"]), int32("max_tokens", [1])]);
    const broken = request([int32("max_tokens", [1])]);
    for (const r of [all, capped, broken]) await backend.executeRequests([r]);
    await Promise.all([all.done, capped.done, broken.done]);
    const words = (r: Recorded): string[] =>
      r.responses.filter((entry) => !entry.final).map((_, i) => outputsOf(r, i).get("text_output")!.toStrings()[0]!);
    expect(words(all)).toEqual(["fox", "brown", "quick", "the", "done"]);
    expect(all.responses.at(-1)).toEqual({ response: { outputs: [] }, final: true });
    expect(words(capped)).toEqual(["three", "done"]);
    expect(broken.responses).toHaveLength(1);
    expect(errorOf(broken).kind).toBe("INVALID_ARG");
    expect(errorOf(broken).message).toContain("has no input 'text_input'");
    await backend.finalize();
  });

  it("tokenizer_ts (model.ts) answers a batch of requests with byte lengths and upper case", async () => {
    const config = exampleConfig("tokenizer_ts");
    const backend = await load(path.join(EXAMPLES, "tokenizer_ts/1/model.ts"), config);
    expect(backend.maxBatchSize).toBe(8);
    const a = request([bytes("text", ["abc", "héllo"], [2, 1])]);
    const b = request([bytes("text", ["日本"], [1, 1])], { outputNames: ["lengths"] });
    const c = request([int32("text", [1], [1, 1])]);
    await backend.executeRequests([a, b, c]);
    expect(Array.from(outputsOf(a).get("lengths")!.toInt32Array())).toEqual([3, 6]);
    expect(outputsOf(a).get("upper")!.toStrings()).toEqual(["ABC", "HÉLLO"]);
    expect(outputsOf(a).get("upper")!.shape).toEqual([2, 1]);
    expect([...outputsOf(b).keys()]).toEqual(["lengths"]);
    expect(Array.from(outputsOf(b).get("lengths")!.toInt32Array())).toEqual([6]);
    expect([errorOf(c).kind, errorOf(c).message]).toEqual(["INVALID_ARG", "input 'text' (BYTES) is required"]);
  });
});
