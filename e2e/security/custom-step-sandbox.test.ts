import { chmodSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IDENTITY_CONFIG, identityModel, writeModel } from "../support/model-fixtures.js";
import { startOperon, tempRepository, type RunningOperon } from "../support/operon-process.js";

/**
 * The sandbox of untrusted TypeScript (custom steps; models with parameter
 * operon_sandbox "true"), through the real `operon serve`: one model.ts
 * that tries, on request, each thing the sandbox forbids. Each attempt
 * fails its request with an error naming what was refused or which limit
 * was broken, the worker is restarted where it was stopped, and the server
 * goes on serving other models (and the step itself) throughout. The same
 * code without the sandbox succeeds at the same attempts, so these tests
 * fail if the sandbox is not there.
 */

const ACTIONS = [
  "ok",
  "read_passwd",
  "read_sibling",
  "write_file",
  "spawn",
  "worker_thread",
  "socket",
  "heap",
  "buffers",
  "busy",
  "uid",
] as const;
type Action = (typeof ACTIONS)[number];

const WRITE_TARGET = join(tmpdir(), `operon-sandbox-escape-${process.pid}.txt`);

/** One model.ts; ACTION (INT32 [1]) picks what it tries. Its own folder holds target.txt (read back as "ok"). */
const HOSTILE_TS = `
import { readFileSync, writeFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { Worker } from "node:worker_threads";
import net from "node:net";

const ACTIONS = ${JSON.stringify(ACTIONS)};
const folder = import.meta.dirname;

function connect(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: "127.0.0.1", port }, () => { socket.end(); resolve("connected"); });
    socket.on("error", reject);
  });
}

export default class Hostile {
  async execute(requests: any[], ctx: any) {
    const out: unknown[] = [];
    for (const request of requests) {
      const action = ACTIONS[request.input("ACTION").toInt32Array()[0]];
      const port = Number(readFileSync(folder + "/target.txt", "utf8"));
      if (action === "read_passwd") readFileSync("/etc/passwd", "utf8");
      if (action === "read_sibling") readFileSync(folder + "/../../identity/config.pbtxt", "utf8");
      if (action === "write_file") writeFileSync(${JSON.stringify(WRITE_TARGET)}, "escaped");
      if (action === "spawn") spawnSync("sh", ["-c", "true"]);
      if (action === "worker_thread") new Worker("1", { eval: true });
      if (action === "socket") await connect(port);
      if (action === "heap") { const hold: number[][] = []; for (;;) hold.push(new Array(100000).fill(Math.random())); }
      if (action === "buffers") { const hold: Buffer[] = []; for (;;) hold.push(Buffer.alloc(32 * 1024 * 1024, 1)); }
      if (action === "busy") { for (;;) {} }
      const answer = action === "uid" ? process.getuid!() : port;
      out.push({ outputs: [ctx.tensor.fromTypedArray("OUTPUT0", [1], new Int32Array([answer]))] });
    }
    return out;
  }
}
`;

function hostileModel(repository: string, name: string, sandboxed: boolean, port: number): void {
  const dir = join(repository, name);
  mkdirSync(join(dir, "1"), { recursive: true });
  writeFileSync(join(dir, "1", "model.ts"), HOSTILE_TS);
  writeFileSync(join(dir, "1", "target.txt"), String(port));
  writeFileSync(
    join(dir, "config.pbtxt"),
    `name: "${name}"
backend: "typescript"
max_batch_size: 0
input [ { name: "ACTION", data_type: TYPE_INT32, dims: [ 1 ] } ]
output [ { name: "OUTPUT0", data_type: TYPE_INT32, dims: [ 1 ] } ]
instance_group [ { count: 1, kind: KIND_CPU } ]
parameters { key: "operon_sandbox" value { string_value: "${sandboxed}" } }
# Only the CPU limit may stop the busy loop, however slowly a loaded host gives it CPU time.
parameters { key: "execute_timeout_ms" value { string_value: "600000" } }
`,
  );
}

async function attempt(
  server: RunningOperon,
  model: string,
  action: Action,
): Promise<{ status: number; error?: string; outputs?: Array<{ data: number[] }> }> {
  const response = await fetch(`${server.httpUrl}/v2/models/${model}/infer`, {
    method: "POST",
    body: JSON.stringify({
      inputs: [{ name: "ACTION", datatype: "INT32", shape: [1], data: [ACTIONS.indexOf(action)] }],
    }),
  });
  return { status: response.status, ...((await response.json()) as object) };
}

async function identityServes(server: RunningOperon): Promise<boolean> {
  const response = await fetch(`${server.httpUrl}/v2/models/identity/infer`, {
    method: "POST",
    body: JSON.stringify({ inputs: [{ name: "INPUT0", datatype: "FP32", shape: [1, 4], data: [1, 2, 3, 4] }] }),
  });
  return response.status === 200;
}

describe("sandboxed TypeScript steps (real server)", () => {
  let server: RunningOperon;
  let target: net.Server;
  let port = 0;
  let connections = 0;

  beforeAll(async () => {
    // A listener the step tries to reach: it proves a socket could connect outside the sandbox.
    target = net.createServer((socket) => {
      connections += 1;
      socket.end();
    });
    await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
    port = (target.address() as net.AddressInfo).port;
    const repository = tempRepository();
    hostileModel(repository, "hostile", true, port);
    hostileModel(repository, "open", false, port);
    writeModel(repository, "identity", identityModel("FP32"), { config: IDENTITY_CONFIG("identity") });
    server = await startOperon([
      "--model-repository",
      repository,
      "--sandbox-memory-mb",
      "256",
      "--sandbox-cpu-ms",
      "5000",
    ]);
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
    target?.close();
  });

  it("serves the step, which reads its own folder", async () => {
    const result = await attempt(server, "hostile", "ok");
    expect(result.error).toBeUndefined();
    expect(result.outputs?.[0]?.data).toEqual([port]);
  });

  it("the same code outside the sandbox reads /etc/passwd, another model's files and reaches the socket", async () => {
    expect((await attempt(server, "open", "read_passwd")).status).toBe(200);
    expect((await attempt(server, "open", "read_sibling")).status).toBe(200);
    const before = connections;
    expect((await attempt(server, "open", "socket")).status).toBe(200);
    expect(connections).toBe(before + 1);
  });

  it.each([
    // The gateway shows clients '<server path>' for the server's folders.
    ["read_passwd", /the sandbox denied reading '.*\/passwd'/],
    ["read_sibling", /the sandbox denied reading '.*\/config\.pbtxt'/],
    ["write_file", /the sandbox denied writing '.*operon-sandbox-escape-/],
    ["spawn", /the sandbox denied starting a child process/],
    ["worker_thread", /the sandbox denied starting a worker thread/],
  ] as const)("refuses %s with an error naming it", async (action, message) => {
    const result = await attempt(server, "hostile", action);
    expect(result.status).toBe(500);
    expect(result.error).toMatch(/model 'hostile' execute failed: /);
    expect(result.error).toMatch(message);
    expect(readdirSync(tmpdir())).not.toContain(WRITE_TARGET.slice(tmpdir().length + 1));
    expect(await identityServes(server)).toBe(true);
  });

  it("has no network: a connect to a listening local port fails", async () => {
    const before = connections;
    const result = await attempt(server, "hostile", "socket");
    expect(result.status).toBe(500);
    expect(result.error).toMatch(/model 'hostile' execute failed: connect (ENETUNREACH|ECONNREFUSED) 127\.0\.0\.1/);
    expect(connections).toBe(before);
  });

  it.each([
    ["heap", /it ran out of JavaScript heap \(its limit is 128 MiB\)/],
    ["buffers", /its resident memory \(\d+ MiB\) went over its limit of 256 MiB \(sandbox\)/],
    ["busy", /it used more than its CPU time limit of 5000 ms \(sandbox\)/],
  ] as const)(
    "stops a worker that breaks its %s limit, and restarts it while the server serves",
    async (action, message) => {
      const serving = identityServes(server);
      const result = await attempt(server, "hostile", action);
      expect(result.status).toBe(503);
      expect(result.error).toMatch(message);
      expect(await serving).toBe(true);
      expect(await identityServes(server)).toBe(true);
      // The step is back: its next request waits for the fresh worker.
      const after = await attempt(server, "hostile", "ok");
      expect(after.error).toBeUndefined();
      expect(after.outputs?.[0]?.data).toEqual([port]);
    },
    240_000,
  );
});

// These machines run the tests as root: the sandbox then enters its network namespace as root and takes the
// --worker-user account inside it (unshare --setuid/--setgid).
describe("sandboxed steps under --worker-user (real server)", () => {
  let server: RunningOperon;
  let target: net.Server;
  let port = 0;

  beforeAll(async () => {
    target = net.createServer((socket) => socket.end());
    await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
    port = (target.address() as net.AddressInfo).port;
    const repository = tempRepository();
    hostileModel(repository, "hostile", true, port);
    // mkdtemp makes 0700 folders: the unprivileged worker account must be able to read the model.
    for (const dir of [repository, join(repository, "hostile"), join(repository, "hostile", "1")])
      chmodSync(dir, 0o755);
    server = await startOperon(["--model-repository", repository, "--worker-user", "nobody"]);
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
    target?.close();
  });

  it("runs as nobody, still without network and reading only its folder", async () => {
    expect((await attempt(server, "hostile", "uid")).outputs?.[0]?.data).toEqual([65534]);
    expect((await attempt(server, "hostile", "ok")).outputs?.[0]?.data).toEqual([port]);
    expect((await attempt(server, "hostile", "socket")).error).toMatch(/connect (ENETUNREACH|ECONNREFUSED)/);
    expect((await attempt(server, "hostile", "read_passwd")).error).toMatch(/the sandbox denied reading/);
  });
});
