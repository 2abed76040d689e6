import { existsSync, mkdtempSync, readdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADD_SUB_CONFIG, addSubModel, IDENTITY_CONFIG, identityModel, writeModel } from "./support/model-fixtures.js";
import {
  runOperon,
  startOperon,
  tempRepository,
  workerProcesses,
  type RunningOperon,
} from "./support/operon-process.js";

/**
 * The model_repository extension and everything around it, through the real
 * `operon serve`: control modes (none / explicit / poll), reloads, config
 * overrides, uploads, failed loads, --strict-model-config, version policies
 * and instance groups.
 */

interface IndexRow {
  name: string;
  version?: string;
  state?: string;
  reason?: string;
}

interface Reply {
  status: number;
  body: Record<string, unknown> & { error?: string };
}

async function call(url: string, body?: unknown, method = body === undefined ? "GET" : "POST"): Promise<Reply> {
  const response = await fetch(url, { method, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  const text = await response.text();
  return { status: response.status, body: text === "" ? {} : (JSON.parse(text) as Reply["body"]) };
}

async function repositoryIndex(server: RunningOperon): Promise<IndexRow[]> {
  const response = await fetch(`${server.httpUrl}/v2/repository/index`, { method: "POST" });
  expect(response.status).toBe(200);
  return (await response.json()) as IndexRow[];
}

async function rowsOf(server: RunningOperon, name: string): Promise<IndexRow[]> {
  return (await repositoryIndex(server)).filter((row) => row.name === name);
}

const load = (server: RunningOperon, name: string, parameters?: Record<string, string>): Promise<Reply> =>
  call(`${server.httpUrl}/v2/repository/models/${name}/load`, parameters === undefined ? {} : { parameters });
const unload = (server: RunningOperon, name: string): Promise<Reply> =>
  call(`${server.httpUrl}/v2/repository/models/${name}/unload`, {});
const modelConfig = (server: RunningOperon, name: string): Promise<Reply> =>
  call(`${server.httpUrl}/v2/models/${name}/config`);

/** Polls until check returns a value other than undefined/false; bounded. */
async function waitFor<T>(what: string, check: () => Promise<T | undefined | false>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}${last !== undefined ? ` (last error: ${String(last)})` : ""}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const SEQ16 = Array.from({ length: 16 }, (_, i) => i);

/** add_sub with INPUT0 = 0..15, INPUT1 = 1: answers OUTPUT0 = i + 1, OUTPUT1 = i - 1. */
async function inferAddSub(server: RunningOperon, model: string): Promise<Reply> {
  return call(`${server.httpUrl}/v2/models/${model}/infer`, {
    inputs: [
      { name: "INPUT0", datatype: "FP32", shape: [1, 16], data: SEQ16 },
      { name: "INPUT1", datatype: "FP32", shape: [1, 16], data: new Array(16).fill(1) },
    ],
  });
}

function expectAddSubAnswer(reply: Reply): void {
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  const outputs = reply.body["outputs"] as Array<{ name: string; data: number[] }>;
  expect(outputs.find((output) => output.name === "OUTPUT0")!.data).toEqual(SEQ16.map((i) => i + 1));
  expect(outputs.find((output) => output.name === "OUTPUT1")!.data).toEqual(SEQ16.map((i) => i - 1));
}

async function inferIdentity(server: RunningOperon, model: string, version?: number): Promise<Reply> {
  const path = version === undefined ? `/v2/models/${model}/infer` : `/v2/models/${model}/versions/${version}/infer`;
  return call(`${server.httpUrl}${path}`, {
    inputs: [{ name: "INPUT0", datatype: "FP32", shape: [1, 4], data: [1, 2, 3, 4] }],
  });
}

/** The add_sub config as a load request's `config` parameter (ModelConfig JSON). */
function addSubConfigJson(name: string, overrides: Record<string, unknown> = {}): string {
  const tensor = (tensorName: string) => ({ name: tensorName, data_type: "TYPE_FP32", dims: [16] });
  return JSON.stringify({
    name,
    backend: "onnxruntime",
    max_batch_size: 8,
    input: [tensor("INPUT0"), tensor("INPUT1")],
    output: [tensor("OUTPUT0"), tensor("OUTPUT1")],
    ...overrides,
  });
}

/** Every file under a folder, relative to it (folders themselves not listed). */
function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return (
    readdirSync(dir, { recursive: true, withFileTypes: true }) as Array<{
      name: string;
      parentPath: string;
      isFile(): boolean;
    }>
  )
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name).slice(dir.length + 1))
    .sort();
}

/** Builds a model folder elsewhere and renames it into place, so a poller never sees it half-written. */
function placeModel(repository: string, name: string, model: Buffer, config: string): void {
  const staging = mkdtempSync(join(tmpdir(), "operon-e2e-staging-"));
  writeModel(staging, name, model, { config });
  renameSync(join(staging, name), join(repository, name));
  rmSync(staging, { recursive: true, force: true });
}

describe("model control mode 'none' (the default)", () => {
  let server: RunningOperon;
  beforeAll(async () => {
    const repository = tempRepository();
    writeModel(repository, "a", addSubModel(), { config: ADD_SUB_CONFIG("a") });
    writeModel(repository, "b", identityModel("FP32"), { config: IDENTITY_CONFIG("b") });
    server = await startOperon(["--model-repository", repository]);
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("loads every model of the repository at start", async () => {
    expect(await repositoryIndex(server)).toEqual([
      { name: "a", version: "1", state: "READY", reason: "" },
      { name: "b", version: "1", state: "READY", reason: "" },
    ]);
    expectAddSubAnswer(await inferAddSub(server, "a"));
  });

  it("answers load and unload with 501 UNSUPPORTED, naming the control mode", async () => {
    for (const reply of [await load(server, "a"), await unload(server, "b")]) {
      expect(reply.status).toBe(501);
      expect(reply.body.error).toMatch(/model control mode is 'none'/);
      expect(reply.body.error).toMatch(/--model-control-mode=explicit/);
    }
    expect((await repositoryIndex(server)).map((row) => row.state)).toEqual(["READY", "READY"]);
  });
});

describe("model control mode 'explicit'", () => {
  let server: RunningOperon;
  let dataDir: string;
  const MAX_UPLOAD_BYTES = 8192;
  const uploadRoot = (): string => join(dataDir, "uploaded-models");

  beforeAll(async () => {
    const repository = tempRepository();
    writeModel(repository, "a", addSubModel(), { config: ADD_SUB_CONFIG("a") });
    writeModel(repository, "b", identityModel("FP32"), { config: IDENTITY_CONFIG("b") });
    dataDir = mkdtempSync(join(tmpdir(), "operon-e2e-data-"));
    server = await startOperon(
      [
        "--model-repository",
        repository,
        "--model-control-mode",
        "explicit",
        "--load-model",
        "a",
        "--max-upload-bytes",
        String(MAX_UPLOAD_BYTES),
        "--backend-isolation",
        "process",
      ],
      { dataDir },
    );
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("loads only the --load-model models at start; the others are listed without a state", async () => {
    expect(await repositoryIndex(server)).toEqual([
      { name: "a", version: "1", state: "READY", reason: "" },
      { name: "b" },
    ]);
    expect((await inferIdentity(server, "b")).status).not.toBe(200);
  });

  it("loads and unloads a model through the API", async () => {
    expect((await load(server, "b")).status).toBe(200);
    expect(await rowsOf(server, "b")).toEqual([{ name: "b", version: "1", state: "READY", reason: "" }]);
    expect((await inferIdentity(server, "b")).body["outputs"]).toMatchObject([{ name: "OUTPUT0", data: [1, 2, 3, 4] }]);

    expect((await unload(server, "b")).status).toBe(200);
    expect(await rowsOf(server, "b")).toEqual([{ name: "b", version: "1", state: "UNAVAILABLE", reason: "unloaded" }]);
    const after = await inferIdentity(server, "b");
    expect(after.status).toBe(503);
    expect(after.body.error).toMatch(/'b' is not ready/);
    expect((await fetch(`${server.httpUrl}/v2/models/b/ready`)).status).not.toBe(200);
    // The other model never noticed.
    expectAddSubAnswer(await inferAddSub(server, "a"));
  });

  it("keeps serving while a model is reloaded", async () => {
    const failures: string[] = [];
    let served = 0;
    let running = true;
    const loop = async (): Promise<void> => {
      while (running) {
        const reply = await inferAddSub(server, "a");
        if (reply.status === 200) served += 1;
        else failures.push(`${reply.status} ${reply.body.error}`);
      }
    };
    const loops = Array.from({ length: 4 }, loop);
    try {
      await waitFor("requests to flow", async () => served >= 10);
      for (let reload = 0; reload < 2; reload += 1) {
        const before = served;
        const workersBefore = workerProcesses(server.pid).filter((worker) => worker.instance === "a_0");
        expect((await load(server, "a")).status).toBe(200);
        // A reload starts fresh workers and retires the old ones.
        const workersAfter = workerProcesses(server.pid).filter((worker) => worker.instance === "a_0");
        expect(workersAfter).toHaveLength(1);
        expect(workersBefore.map((worker) => worker.pid)).not.toContain(workersAfter[0]!.pid);
        await waitFor("requests after the reload", async () => served >= before + 10);
      }
    } finally {
      running = false;
      await Promise.all(loops);
    }
    expect(failures).toEqual([]);
    expect(await rowsOf(server, "a")).toEqual([{ name: "a", version: "1", state: "READY", reason: "" }]);
  });

  it("reloads with a config override, and refuses a bad override while the old version keeps serving", async () => {
    expect((await load(server, "a", { config: addSubConfigJson("a", { max_batch_size: 4 }) })).status).toBe(200);
    expect((await modelConfig(server, "a")).body["max_batch_size"]).toBe(4);

    const unknownField = await load(server, "a", { config: addSubConfigJson("a", { bogus_field: 1 }) });
    expect(unknownField.status).toBe(400);
    expect(unknownField.body.error).toMatch(/bogus_field/);

    const malformed = await load(server, "a", { config: '{"name": "a", "max_batch_size": ' });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error).toMatch(/config parameter.*invalid JSON/);

    expect((await modelConfig(server, "a")).body["max_batch_size"]).toBe(4);
    expect(await rowsOf(server, "a")).toEqual([{ name: "a", version: "1", state: "READY", reason: "" }]);
    expectAddSubAnswer(await inferAddSub(server, "a"));
  });

  describe("uploads ('file:<version>/<path>' parameters)", () => {
    it("loads a new model from uploaded files into the data dir and serves it", async () => {
      const reply = await load(server, "uploaded", {
        config: addSubConfigJson("uploaded"),
        "file:1/model.onnx": addSubModel().toString("base64"),
      });
      expect(reply.status, reply.body.error).toBe(200);
      expect(await rowsOf(server, "uploaded")).toEqual([
        { name: "uploaded", version: "1", state: "READY", reason: "" },
      ]);
      expectAddSubAnswer(await inferAddSub(server, "uploaded"));
      // <data dir>/uploaded-models/<model>/<upload id>/1/model.onnx
      expect(filesUnder(uploadRoot())).toEqual([expect.stringMatching(/^uploaded\/[^/]+\/1\/model\.onnx$/)]);

      expect((await unload(server, "uploaded")).status).toBe(200);
      expect(filesUnder(uploadRoot())).toEqual([]);
      expect(existsSync(join(uploadRoot(), "uploaded"))).toBe(false);
    });

    const model = (): string => addSubModel().toString("base64");
    const rejected: Array<[string, () => Record<string, string>, RegExp]> = [
      [
        "a path with '..'",
        () => ({ config: addSubConfigJson("rejected"), "file:1/../../escape.onnx": model() }),
        /relative file path/,
      ],
      [
        "an absolute path",
        () => ({ config: addSubConfigJson("rejected"), "file:/tmp/model.onnx": model() }),
        /relative file path/,
      ],
      ["files without a config", () => ({ "file:1/model.onnx": model() }), /must also provide the 'config' parameter/],
      [
        "invalid base64",
        () => ({ config: addSubConfigJson("rejected"), "file:1/model.onnx": "not*base64!" }),
        /file:1\/model\.onnx.*not valid base64/,
      ],
      [
        "files over --max-upload-bytes",
        () => ({
          config: addSubConfigJson("rejected"),
          "file:1/model.onnx": model(),
          "file:1/padding.bin": Buffer.alloc(MAX_UPLOAD_BYTES).toString("base64"),
        }),
        new RegExp(`over the limit of ${MAX_UPLOAD_BYTES} bytes \\(--max-upload-bytes\\)`),
      ],
    ];
    for (const [what, parameters, message] of rejected) {
      it(`rejects ${what} with 400 and writes nothing`, async () => {
        const reply = await load(server, "rejected", parameters());
        expect(reply.status).toBe(400);
        expect(reply.body.error).toMatch(message);
        expect(filesUnder(dataDir)).toEqual([]);
        expect((await rowsOf(server, "rejected")).filter((row) => row.state === "READY")).toEqual([]);
        expect((await fetch(`${server.httpUrl}/v2/models/rejected/ready`)).status).not.toBe(200);
      });
    }

    it("fails the load of an invalid ONNX file with ONNX Runtime's reason and removes the upload", async () => {
      const garbage = Buffer.from("this is not an ONNX model, just some bytes".repeat(8));
      const reply = await load(server, "garbage", {
        config: addSubConfigJson("garbage"),
        "file:1/model.onnx": garbage.toString("base64"),
      });
      expect(reply.status).toBe(400);
      expect(reply.body.error).toMatch(/Protobuf parsing failed/); // ONNX Runtime's words
      const rows = await rowsOf(server, "garbage");
      expect(rows).toEqual([{ name: "garbage", state: "UNAVAILABLE", reason: reply.body.error }]);
      expect(filesUnder(dataDir)).toEqual([]);
      expect(existsSync(join(uploadRoot(), "garbage"))).toBe(false);
    });
  });
});

describe("explicit mode with --load-model '*'", () => {
  it("loads every model at start", async () => {
    const repository = tempRepository();
    writeModel(repository, "a", addSubModel(), { config: ADD_SUB_CONFIG("a") });
    writeModel(repository, "b", identityModel("FP32"), { config: IDENTITY_CONFIG("b") });
    const server = await startOperon([
      "--model-repository",
      repository,
      "--model-control-mode",
      "explicit",
      "--load-model",
      "*",
    ]);
    try {
      expect(await repositoryIndex(server)).toEqual([
        { name: "a", version: "1", state: "READY", reason: "" },
        { name: "b", version: "1", state: "READY", reason: "" },
      ]);
    } finally {
      await server.stop();
    }
  });
});

describe("model control mode 'poll'", () => {
  let server: RunningOperon;
  let repository: string;
  beforeAll(async () => {
    repository = tempRepository();
    writeModel(repository, "a", addSubModel(), { config: ADD_SUB_CONFIG("a") });
    server = await startOperon([
      "--model-repository",
      repository,
      "--model-control-mode",
      "poll",
      "--repository-poll-secs",
      "1",
    ]);
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("loads a model folder added to the repository", async () => {
    expect(await rowsOf(server, "fresh")).toEqual([]);
    placeModel(repository, "fresh", identityModel("FP32"), IDENTITY_CONFIG("fresh"));
    await waitFor("'fresh' to become READY", async () => (await rowsOf(server, "fresh"))[0]?.state === "READY");
    expect((await inferIdentity(server, "fresh")).status).toBe(200);
  });

  it("reloads a model whose config changed", async () => {
    expect((await modelConfig(server, "a")).body["max_batch_size"]).toBe(8);
    const staging = mkdtempSync(join(tmpdir(), "operon-e2e-staging-"));
    writeFileSync(join(staging, "config.pbtxt"), ADD_SUB_CONFIG("a").replace("max_batch_size: 8", "max_batch_size: 2"));
    renameSync(join(staging, "config.pbtxt"), join(repository, "a", "config.pbtxt"));
    rmSync(staging, { recursive: true, force: true });
    await waitFor("the new max_batch_size", async () => (await modelConfig(server, "a")).body["max_batch_size"] === 2);
    expect(await rowsOf(server, "a")).toEqual([{ name: "a", version: "1", state: "READY", reason: "" }]);
    expectAddSubAnswer(await inferAddSub(server, "a"));
  });

  it("unloads a model whose folder was removed", async () => {
    rmSync(join(repository, "fresh"), { recursive: true, force: true });
    await waitFor("'fresh' to be unloaded", async () => (await rowsOf(server, "fresh"))[0]?.reason === "unloaded");
    expect(await rowsOf(server, "fresh")).toEqual([
      { name: "fresh", version: "1", state: "UNAVAILABLE", reason: "unloaded" },
    ]);
    expect((await inferIdentity(server, "fresh")).status).not.toBe(200);
    expectAddSubAnswer(await inferAddSub(server, "a"));
  });

  it("refuses the load/unload API, naming poll mode", async () => {
    const reply = await load(server, "a");
    expect(reply.status).toBe(501);
    expect(reply.body.error).toMatch(/polling is enabled/);
  });
});

describe("models that fail to load", () => {
  let repository: string;
  beforeAll(() => {
    repository = tempRepository();
    writeModel(repository, "good", addSubModel(), { config: ADD_SUB_CONFIG("good") });
    // Line 3, column 1: a field ModelConfig does not have.
    writeModel(repository, "bad_config", identityModel("FP32"), {
      config: 'name: "bad_config"\nmax_batch_size: 8\nno_such_field: 3\n',
    });
    // The file says INT32, the model is FP32.
    writeModel(repository, "mismatch", identityModel("FP32"), {
      config: IDENTITY_CONFIG("mismatch").replaceAll("TYPE_FP32", "TYPE_INT32"),
    });
  });

  describe("with --exit-on-error=false", () => {
    let server: RunningOperon;
    beforeAll(async () => {
      server = await startOperon(["--model-repository", repository, "--exit-on-error=false"]);
    });
    afterAll(async () => {
      await server?.stop();
    });

    it("lists each broken model UNAVAILABLE with its reason while the good one serves", async () => {
      const index = await repositoryIndex(server);
      expect(index.map((row) => [row.name, row.state])).toEqual([
        ["bad_config", "UNAVAILABLE"],
        ["good", "READY"],
        ["mismatch", "UNAVAILABLE"],
      ]);
      const reason = (name: string): string => index.find((row) => row.name === name)!.reason!;
      expect(reason("bad_config")).toMatch(/bad_config\/config\.pbtxt:3:1: unknown field 'no_such_field'/);
      expect(reason("mismatch")).toMatch(/INPUT0/);
      expect(reason("mismatch")).toMatch(/INT32/);
      expect(reason("mismatch")).toMatch(/FP32/);
      expectAddSubAnswer(await inferAddSub(server, "good"));
    });

    it("is not ready under strict readiness", async () => {
      expect((await fetch(`${server.httpUrl}/v2/health/ready`)).status).toBe(400);
      expect((await fetch(`${server.httpUrl}/v2/health/live`)).status).toBe(200);
      expect((await fetch(`${server.httpUrl}/v2/models/good/ready`)).status).toBe(200);
    });
  });

  it("is ready with --strict-readiness=false", async () => {
    const server = await startOperon([
      "--model-repository",
      repository,
      "--exit-on-error=false",
      "--strict-readiness=false",
    ]);
    try {
      expect((await fetch(`${server.httpUrl}/v2/health/ready`)).status).toBe(200);
    } finally {
      await server.stop();
    }
  });

  it("exits non-zero naming the failed models with the default --exit-on-error", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "operon-e2e-data-"));
    const result = await runOperon([
      "serve",
      "--model-repository",
      repository,
      "--http-port",
      "0",
      "--grpc-port",
      "0",
      "--metrics-port",
      "0",
      "--data-dir",
      dataDir,
      // The control plane off, as startOperon starts every data-plane test: on (the CLI's default), it opened an
      // embedded database and migrated it before the models loaded, 25 to 60 s of this test on the loaded 2-core
      // host, 10 s without (the control plane's own start-up is tested in control-plane.test.ts).
      "--control-plane=false",
    ]);
    const output = result.stdout + result.stderr;
    expect(result.code).not.toBe(0);
    expect(result.code).not.toBeNull();
    expect(output).toMatch(/2 model\(s\) failed to load at startup \(bad_config, mismatch\)/);
    expect(output).toMatch(/--exit-on-error/);
    expect(output).not.toMatch(/Operon HTTP on/);
  });
});

describe("--strict-model-config", () => {
  let repository: string;
  beforeAll(() => {
    repository = tempRepository();
    writeModel(repository, "no_config", identityModel("FP32", [4])); // no config.pbtxt
  });

  it("fails a model without config.pbtxt, saying why", async () => {
    const server = await startOperon([
      "--model-repository",
      repository,
      "--strict-model-config",
      "--exit-on-error=false",
    ]);
    try {
      const [row] = await rowsOf(server, "no_config");
      expect(row).toMatchObject({ name: "no_config", state: "UNAVAILABLE" });
      expect(row!.reason).toMatch(/no config\.pbtxt and --strict-model-config is set/);
    } finally {
      await server.stop();
    }
  });

  it("auto-completes the config from the ONNX file without the flag", async () => {
    const server = await startOperon(["--model-repository", repository]);
    try {
      expect(await rowsOf(server, "no_config")).toEqual([
        { name: "no_config", version: "1", state: "READY", reason: "" },
      ]);
      const config = (await modelConfig(server, "no_config")).body;
      expect(config["max_batch_size"]).toBe(4);
      expect(config["input"]).toMatchObject([{ name: "INPUT0", data_type: "TYPE_FP32", dims: [4] }]);
      expect(config["output"]).toMatchObject([{ name: "OUTPUT0", data_type: "TYPE_FP32", dims: [4] }]);
      expect((await inferIdentity(server, "no_config")).status).toBe(200);
    } finally {
      await server.stop();
    }
  });
});

describe("version policies and instance groups", () => {
  let server: RunningOperon;
  beforeAll(async () => {
    const repository = tempRepository();
    const policies: Record<string, string> = {
      latest: "",
      all: "version_policy: { all: {} }",
      specific: "version_policy: { specific: { versions: [ 1, 3 ] } }",
    };
    for (const [name, policy] of Object.entries(policies)) {
      for (const version of [1, 2, 3])
        writeModel(repository, name, identityModel("FP32"), { version, config: IDENTITY_CONFIG(name, policy) });
    }
    writeModel(repository, "trio", addSubModel(), {
      config: ADD_SUB_CONFIG("trio", "instance_group [ { count: 3, kind: KIND_CPU } ]"),
    });
    server = await startOperon(["--model-repository", repository, "--backend-isolation", "process"]);
  });
  afterAll(async () => {
    await server?.stop();
  });

  const servedVersions = async (name: string): Promise<string[]> =>
    (await rowsOf(server, name)).filter((row) => row.state === "READY").map((row) => row.version!);

  const answeringVersions = async (name: string): Promise<number[]> => {
    const answering: number[] = [];
    for (const version of [1, 2, 3]) {
      const reply = await inferIdentity(server, name, version);
      if (reply.status === 200) answering.push(version);
      else expect(reply.status).toBe(404);
    }
    return answering;
  };

  it("serves only the latest version by default", async () => {
    expect(await servedVersions("latest")).toEqual(["3"]);
    expect(await answeringVersions("latest")).toEqual([3]);
    expect((await inferIdentity(server, "latest")).body["model_version"]).toBe("3");
  });

  it("serves every version under version_policy all", async () => {
    expect(await servedVersions("all")).toEqual(["1", "2", "3"]);
    expect(await answeringVersions("all")).toEqual([1, 2, 3]);
    expect((await inferIdentity(server, "all")).body["model_version"]).toBe("3");
  });

  it("serves the listed versions under version_policy specific", async () => {
    expect(await servedVersions("specific")).toEqual(["1", "3"]);
    expect(await answeringVersions("specific")).toEqual([1, 3]);
  });

  it("runs instance_group count 3 as three worker processes", async () => {
    const workers = workerProcesses(server.pid).filter((worker) => worker.instance.startsWith("trio_"));
    expect(workers.map((worker) => worker.instance)).toEqual(["trio_0_0", "trio_0_1", "trio_0_2"]);
    expect(new Set(workers.map((worker) => worker.pid)).size).toBe(3);
    const metrics = await (await fetch(server.metricsUrl)).text();
    expect(metrics).toMatch(/^operon_worker_up\{model="trio",version="1"\} 3$/m);
    expectAddSubAnswer(await inferAddSub(server, "trio"));
  });
});
