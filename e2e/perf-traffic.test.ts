import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApiSession } from "./support/api-client.js";
import { signedIn, startControlPlaneServer } from "./support/control-plane-server.js";
import { runOperon, type RunningOperon } from "./support/operon-process.js";

// Issue 27 item 8: perf traffic is not user traffic. `operon perf` tags its requests; the gateway counts tagged
// requests from admin keys apart, and the control plane (the Overview's live figures here; usage, cost and the
// scheduler's demand read the same statistics) leaves them out. An infer-only key cannot hide its traffic by tagging.
// `-H` passes the API key, as perf_analyzer's does.

interface StatsEntry {
  name: string;
  inference_count: number;
  inference_stats: { success: { count: number } };
  operon_perf_traffic?: { success_count: number; inference_count: number };
}

describe("perf traffic", () => {
  let server: RunningOperon;
  let admin: ApiSession;
  let adminKey: string;
  let inferKey: string;
  let address: string;

  beforeAll(async () => {
    server = await startControlPlaneServer(["--require-api-key"]);
    admin = await signedIn(server);
    adminKey = (await admin.client.apiKeys.create.mutate({ name: "perf-admin", scopes: ["admin", "infer"] })).key;
    inferKey = (await admin.client.apiKeys.create.mutate({ name: "perf-infer", scopes: ["infer"] })).key;
    address = server.httpUrl.replace(/^http:\/\//, "");
    // Keys reach the gateway within a second (the shared-state poll).
    for (let i = 0; i < 100; i += 1) {
      const response = await fetch(`${server.httpUrl}/v2/models/add_sub/stats`, {
        headers: { authorization: `Bearer ${adminKey}` },
      });
      if (response.ok) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
  });

  async function rawStats(): Promise<StatsEntry> {
    const response = await fetch(`${server.httpUrl}/v2/models/add_sub/stats`, {
      headers: { authorization: `Bearer ${adminKey}` },
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { model_stats: StatsEntry[] };
    return body.model_stats[0]!;
  }

  async function overviewRequests(): Promise<number> {
    const current = await admin.client.metrics.current.query();
    return current.models.filter((entry) => entry.model === "add_sub").reduce((sum, entry) => sum + entry.requests, 0);
  }

  /** How many add_sub requests the latency summary has observed (the usage charts' p50..p99 come from it). */
  async function summaryCount(): Promise<number> {
    const text = await (await fetch(server.metricsUrl)).text();
    const line = text
      .split("\n")
      .find((entry) => entry.startsWith("nv_inference_request_summary_us_count{") && entry.includes('model="add_sub"'));
    return line === undefined ? 0 : Number(line.split(" ").at(-1));
  }

  const perf = (...extra: string[]) =>
    runOperon(["perf", "-m", "add_sub", "-u", address, "--request-count", "40", "--json", ...extra]);

  it("operon perf needs -H for an API key, and -H refuses a malformed header without echoing its value", async () => {
    const without = await perf();
    expect(without.code).toBe(1);
    expect(without.stderr).toMatch(/needs an API key/);
    const malformed = await perf("-H", `Bearer ${inferKey}`);
    expect(malformed.code).toBe(2);
    expect(malformed.stderr).toMatch(/expected 'Name: value'/);
    expect(malformed.stderr).not.toContain(inferKey);
  });

  it("an admin key's perf requests are counted apart and left out of the Overview's requests", async () => {
    const before = await rawStats();
    const overviewBefore = await overviewRequests();
    const summaryBefore = await summaryCount();
    const run = await perf("-H", `Authorization: Bearer ${adminKey}`);
    expect(run.stderr).not.toMatch(/error/i);
    expect(run.code).toBe(0);
    const after = await rawStats();
    // 40 measured + 1 warm-up request, all tagged; Triton's own counts still include them (perf reads them).
    const sent = after.inference_stats.success.count - before.inference_stats.success.count;
    expect(sent).toBe(41);
    expect(after.operon_perf_traffic!.success_count - (before.operon_perf_traffic?.success_count ?? 0)).toBe(41);
    expect(after.operon_perf_traffic!.inference_count - (before.operon_perf_traffic?.inference_count ?? 0)).toBe(41);
    expect(await overviewRequests()).toBe(overviewBefore);
    // Nor are they in the latency summaries, which the usage charts' percentiles read.
    expect(await summaryCount()).toBe(summaryBefore);
  }, 60_000);

  it("an infer-only key's tagged requests count as its own traffic", async () => {
    const before = await rawStats();
    const overviewBefore = await overviewRequests();
    const run = await perf("-H", `Authorization: Bearer ${inferKey}`);
    expect(run.code).toBe(0);
    const after = await rawStats();
    expect(after.operon_perf_traffic!.success_count).toBe(before.operon_perf_traffic!.success_count);
    expect((await overviewRequests()) - overviewBefore).toBe(41);
    // A user's requests are in the latency summaries (the check above can fail: the summary does count).
    expect(await summaryCount()).toBeGreaterThanOrEqual(41);
  }, 60_000);
});
