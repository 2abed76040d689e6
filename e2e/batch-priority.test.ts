import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApiSession } from "./support/api-client.js";
import { signedIn, startControlPlaneServer } from "./support/control-plane-server.js";
import { tempRepository, type RunningOperon } from "./support/operon-process.js";

/**
 * A batch job beside online traffic, through the real server (issue 24):
 * online requests are served ahead of the job's queued requests (its key's
 * lowest priority level), the gateway's online latency leaves the job's
 * requests out, and the job's concurrency follows online p99: it backs off
 * when an online client starts and fills the valley when the client stops.
 * Every assertion is on ordering or on the job's own decisions, never on a
 * wall-clock threshold: the waits are generous and only wait.
 */

const EXEC_MS = 20;

// One instance, one request per execution; Y = the number of this execution
// (1, 2, ...). While the file `hold` exists, an execution waits (and says
// so in `hold.held`): the test freezes the model to let requests queue up.
function gateModel(holdPath: string): string {
  return `import { existsSync, writeFileSync } from "node:fs";
let executions = 0;
export default class {
  async execute(requests, ctx) {
    if (existsSync(${JSON.stringify(holdPath)})) writeFileSync(${JSON.stringify(`${holdPath}.held`)}, "");
    while (existsSync(${JSON.stringify(holdPath)})) await new Promise((resolve) => setTimeout(resolve, 5));
    await new Promise((resolve) => setTimeout(resolve, ${EXEC_MS}));
    executions += 1;
    return requests.map(() => ({ outputs: [ctx.tensor.float32("Y", [1, 1], [executions])] }));
  }
}`;
}

const GATE_CONFIG = `name: "gate"
backend: "typescript"
max_batch_size: 1
input [ { name: "X", data_type: TYPE_FP32, dims: [ 2 ] } ]
output [ { name: "Y", data_type: TYPE_FP32, dims: [ 1 ] } ]
instance_group [ { count: 1, kind: KIND_CPU } ]
dynamic_batching { priority_levels: 2 default_priority_level: 1 }`;

const ONLINE_BODY = JSON.stringify({ inputs: [{ name: "X", datatype: "FP32", shape: [1, 2], data: [-1, -1] }] });

type JobView = Awaited<ReturnType<ApiSession["client"]["jobs"]["get"]["query"]>>;

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 90_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("batch job priority under online load (real server)", () => {
  let server: RunningOperon;
  let admin: ApiSession;
  let holdPath: string;
  let jobId: string;

  const online = async (): Promise<number> => {
    const response = await fetch(`${server.httpUrl}/v2/models/gate/infer`, { method: "POST", body: ONLINE_BODY });
    const body = (await response.json()) as { outputs?: Array<{ data: number[] }>; error?: string };
    if (!response.ok) throw new Error(`online request answered ${response.status}: ${body.error}`);
    return body.outputs![0]!.data[0]!;
  };
  const pending = async (): Promise<number> => {
    const text = await (await fetch(server.metricsUrl)).text();
    const line = /^nv_inference_pending_request_count\{model="gate",version="1"\} (\d+)/m.exec(text);
    return Number(line?.[1] ?? 0);
  };
  const executions = async (): Promise<number> => {
    const stats = (await (await fetch(`${server.httpUrl}/v2/models/gate/stats`)).json()) as {
      model_stats: Array<{ execution_count: number }>;
    };
    return stats.model_stats[0]!.execution_count;
  };
  const onlineCount = async (): Promise<number> => {
    const body = (await (await fetch(`${server.httpUrl}/v2/models/gate/online_latency?window_ms=60000`)).json()) as {
      online_latency: Array<{ count: number }>;
    };
    return body.online_latency.reduce((sum, entry) => sum + entry.count, 0);
  };
  const job = (): Promise<JobView> => admin.client.jobs.get.query({ id: jobId });
  const jobUntil = async (what: string, done: (view: JobView) => boolean) => {
    let last: JobView | undefined;
    try {
      return await waitFor(what, async () => {
        last = await job();
        if (last.state !== "RUNNING") throw new Error(`the job is ${last.state} (${last.error})`);
        return done(last) ? last : undefined;
      });
    } catch (error) {
      throw new Error(`${(error as Error).message}; the job's last window: ${JSON.stringify(last?.control)}`);
    }
  };

  beforeAll(async () => {
    const repository = tempRepository();
    holdPath = join(repository, "hold");
    mkdirSync(join(repository, "gate", "1"), { recursive: true });
    writeFileSync(join(repository, "gate", "1", "model.js"), gateModel(holdPath));
    writeFileSync(join(repository, "gate", "config.pbtxt"), GATE_CONFIG);
    // A window of 400 ms so the job decides often; the job's own budget is out of the way (online p99 decides).
    server = await startControlPlaneServer(
      [
        "--model-repository",
        repository,
        "--load-model",
        "gate",
        "--batch-window-ms",
        "400",
        "--batch-budget-ms",
        "10000",
      ],
      { timeoutMs: 150_000 },
    );
    admin = await signedIn(server);
    const rows = ["id,a,b", ...Array.from({ length: 20_000 }, (_, i) => `k${i},${i % 50},${i % 7}`)].join("\n");
    const dataset = await admin.client.datasets.create.mutate({
      name: "gate-rows",
      file: { kind: "upload", fileName: "rows.csv", contentBase64: Buffer.from(rows).toString("base64") },
      keyColumns: ["id"],
    });
    const created = await admin.client.jobs.create.mutate({
      datasetId: dataset.id,
      target: { kind: "MODEL", name: "gate" },
      mapping: [{ input: "X", kind: "tensor", columns: ["a", "b"] }],
    });
    jobId = created.id;
  }, 200_000);

  afterAll(async () => {
    if (holdPath !== undefined) rmSync(holdPath, { force: true });
    if (jobId !== undefined) await admin?.client.jobs.cancel.mutate({ id: jobId }).catch(() => undefined);
    await server?.stop();
  });

  it("serves an online request ahead of the job's queued requests, and leaves the job out of online latency", async () => {
    // No online traffic: the job grows its concurrency on its own.
    await jobUntil("the job to reach 4 requests in flight", (view) => view.concurrency >= 4 && view.doneRows > 0);
    // The job's requests do not count as online traffic.
    expect(await executions()).toBeGreaterThan(10);
    expect(await onlineCount()).toBe(0);

    writeFileSync(holdPath, "");
    // One execution held (every one before it has finished), at least 3 of the job's requests queued behind it.
    await waitFor("the model to hold an execution", async () => (existsSync(`${holdPath}.held`) ? true : undefined));
    const queued = await waitFor("job requests to queue", async () => {
      const n = await pending();
      return n >= 3 ? n : undefined;
    });
    const before = await executions();
    const answer = online();
    await waitFor("the online request to queue", async () => ((await pending()) > queued ? true : undefined));
    rmSync(holdPath);
    const served = await answer;
    // The held execution finishes (before + 1); the online request is the very next, ahead of every queued job request.
    expect(served).toBe(before + 2);
    expect(await onlineCount()).toBe(1);
  }, 120_000);

  it("backs off while an online client runs and fills the valley when it stops", async () => {
    // Its ceiling (aimd.ts jobLimitCeiling): four executions' worth, 4 requests for a model of batch 1.
    const grown = await jobUntil(
      "the job to grow without online traffic",
      (view) => view.concurrency >= 4 && (view.control?.reason === "within" || view.control?.reason === "clear"),
    );

    // Two online clients, one request after the other each: enough requests a span for online p99 to count.
    let stop = false;
    let served = 0;
    const clients = Promise.all(
      [0, 1].map(async () => {
        while (!stop) {
          await online();
          served += 1;
        }
      }),
    );
    try {
      // Online p99 rises over its budget: the job halves until it is at its minimum, one request in flight.
      await jobUntil("the job to back off", (view) => view.control?.reason === "online-over");
      const backedOff = await jobUntil("the job to reach one request in flight", (view) => view.concurrency === 1);
      // It measured online latency without itself, with the client running.
      const probed = await jobUntil("a baseline with online traffic", (view) => view.control?.baselineMs !== undefined);
      expect(probed.control!.onlineBudgetMs).toBeCloseTo(probed.control!.baselineMs! * 1.1, 5);
      expect(backedOff.concurrency).toBeLessThan(grown.concurrency);
    } finally {
      stop = true;
      await clients;
    }
    expect(served).toBeGreaterThan(20);

    // The client stopped: the job fills the valley again.
    const refilled = await jobUntil("the job to grow again", (view) => view.concurrency >= 4);
    expect(["within", "clear"]).toContain(refilled.control?.reason);
    expect(existsSync(holdPath)).toBe(false);
  }, 180_000);
});
