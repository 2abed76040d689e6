import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signedIn } from "../support/control-plane-server.js";
import { runOperon, startOperon, tempRepository, type RunningOperon } from "../support/operon-process.js";

// Issue 28, item 5: a TypeScript model loaded by an engineer read OPERON_ADMIN_PASSWORD from its
// environment, from the server's environ and command line, ran as uid 0 and read /etc/shadow.
// The spy below is such a model: it answers with everything it could read.

const FLAG_SECRET = "flag-secret-Zq81xk2";
const ENV_SECRET = "env-secret-Pw73mv9q";
const DATABASE_SECRET = "memory:";
const SPY = `
import { readFileSync } from "node:fs";
function read(path) {
  try { return readFileSync(path, "latin1"); } catch (error) { return "unreadable: " + error.code; }
}
export default class {
  execute(requests, ctx) {
    const report = JSON.stringify({
      env: process.env,
      uid: process.getuid(),
      parentCmdline: read("/proc/" + process.ppid + "/cmdline"),
      parentEnviron: read("/proc/" + process.ppid + "/environ"),
      shadow: read("/etc/shadow"),
    });
    return requests.map(() => ({ outputs: [ctx.tensor.bytes("report", [1], [report])] }));
  }
}
`;

interface SpyReport {
  env: Record<string, string>;
  uid: number;
  parentCmdline: string;
  parentEnviron: string;
  shadow: string;
}

function spyRepository(): string {
  const repository = tempRepository("operon-sec-spy-");
  mkdirSync(join(repository, "spy", "1"), { recursive: true });
  writeFileSync(join(repository, "spy", "1", "model.js"), SPY);
  writeFileSync(
    join(repository, "spy", "config.pbtxt"),
    'backend: "typescript"\nmax_batch_size: 0\ninput [ { name: "x", data_type: TYPE_STRING, dims: [ 1 ] } ]\noutput [ { name: "report", data_type: TYPE_STRING, dims: [ 1 ] } ]\n',
  );
  // mkdtemp makes 0700 folders: an unprivileged worker account must be able to read the model.
  for (const dir of [repository, join(repository, "spy"), join(repository, "spy", "1")]) chmodSync(dir, 0o755);
  return repository;
}

async function startSpyServer(extraArgs: string[]): Promise<RunningOperon> {
  return startOperon(
    [
      "--control-plane",
      "--console=false",
      "--api-port",
      "0",
      "--model-repository",
      spyRepository(),
      "--model-control-mode",
      "explicit",
      "--load-model",
      "spy",
      "--admin-email",
      "admin@example.com",
      "--admin-password",
      FLAG_SECRET,
      ...extraArgs,
    ],
    { env: { OPERON_ADMIN_PASSWORD: ENV_SECRET, DATABASE_URL: DATABASE_SECRET } },
  );
}

async function spy(server: RunningOperon): Promise<SpyReport> {
  const response = await fetch(`${server.httpUrl}/v2/models/spy/infer`, {
    method: "POST",
    body: JSON.stringify({ inputs: [{ name: "x", datatype: "BYTES", shape: [1], data: ["?"] }] }),
  });
  const body = (await response.json()) as { outputs?: Array<{ data: string[] }>; error?: string };
  expect(response.status, body.error).toBe(200);
  return JSON.parse(body.outputs![0]!.data[0]!) as SpyReport;
}

function expectNoSecrets(report: SpyReport): void {
  const env = JSON.stringify(report.env);
  for (const secret of [FLAG_SECRET, ENV_SECRET]) {
    expect(env).not.toContain(secret);
    expect(report.parentCmdline).not.toContain(secret);
    expect(report.parentEnviron).not.toContain(secret);
  }
  expect(report.env.OPERON_ADMIN_PASSWORD).toBeUndefined();
  expect(report.env.DATABASE_URL).toBeUndefined();
  expect(report.env.NODE_OPTIONS).toBeUndefined();
  // Only the allow-list (plus the worker's own switches) reaches user code.
  expect(
    Object.keys(report.env).filter(
      (name) =>
        name.startsWith("OPERON_") &&
        name !== "OPERON_WORKER_INSTANCE" &&
        name !== "OPERON_TRACE" &&
        !name.startsWith("OPERON_NATIVE") &&
        !name.startsWith("OPERON_WORKER_SHM"),
    ),
  ).toEqual([]);
}

describe("worker processes do not see the server's secrets", () => {
  let server: RunningOperon;
  beforeAll(async () => {
    server = await startSpyServer([]);
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
  });

  it("a model finds no secret in its environment, nor in the server's command line or environ", async () => {
    const report = await spy(server);
    expectNoSecrets(report);
    expect(report.parentCmdline).toContain("--admin-password ***");
    expect(report.env.PATH).toBe(process.env.PATH);
  });

  it("the server's own command line and environment no longer hold them either", async () => {
    expect(readFileSync(`/proc/${server.pid}/cmdline`, "latin1")).not.toContain(FLAG_SECRET);
    expect(readFileSync(`/proc/${server.pid}/environ`, "latin1")).not.toContain(ENV_SECRET);
    expect(server.output()).not.toContain("stay readable");
    // The server still used them: the admin it created signs in with the flag's password.
    const session = await signedIn(server, { email: "admin@example.com", password: FLAG_SECRET });
    expect((await session.client.auth.session.query()).user?.email).toBe("admin@example.com");
  });
});

// These machines run the tests as root, as the attack run ran the server.
describe("--worker-user: a root server's workers run unprivileged", () => {
  let server: RunningOperon;
  beforeAll(async () => {
    server = await startSpyServer(["--worker-user", "nobody"]);
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
  });

  it("the model runs as nobody and reads neither /etc/shadow nor the server's environ", async () => {
    const report = await spy(server);
    expect(report.uid).toBe(65534);
    expect(report.shadow).toMatch(/^unreadable: EACCES/);
    expect(report.parentEnviron).toMatch(/^unreadable: EACCES/);
    expect(report.env.HOME).toBe("/nonexistent");
    expectNoSecrets(report);
  });

  it("refuses --worker-user naming an account that does not exist", async () => {
    const run = await runOperon([
      "serve",
      "--model-repository",
      spyRepository(),
      "--control-plane=false",
      "--http-port",
      "0",
      "--grpc-port",
      "0",
      "--metrics-port",
      "0",
      "--worker-user",
      "no-such-operon-user",
    ]);
    expect(run.code).toBe(1);
    expect(run.stdout + run.stderr).toMatch(/--worker-user no-such-operon-user: no such account/);
  });
});
