import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parsePerfReport } from "@operon/perf/perf-report";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { float32Buffer, inferBinary, modelStats, type BinaryInput } from "./support/http-binary-client.js";
import { ADD_SUB_CONFIG, addSubModel, writeModel } from "./support/model-fixtures.js";
import { runOperon, startOperon, tempRepository, type RunningOperon } from "./support/operon-process.js";

/**
 * Triton's response cache through the real server: `--cache-config
 * local,size=<bytes>` plus per-model `response_cache { enable: true }`.
 *
 * Requests are batch 8 of add_sub ([8,16] FP32 in, two [8,16] FP32 out):
 * 1024 output bytes per response, so an entry costs ~1.4 KB with its
 * bookkeeping and a 3500-byte cache holds two of them, never three.
 */
const CACHE_BYTES = 3500;
const BATCH = 8;

function inputs(value: number, other = 1): BinaryInput[] {
  return [
    { name: "INPUT0", datatype: "FP32", shape: [BATCH, 16], data: float32Buffer(value, BATCH * 16) },
    { name: "INPUT1", datatype: "FP32", shape: [BATCH, 16], data: float32Buffer(other, BATCH * 16) },
  ];
}

async function metricsText(server: RunningOperon): Promise<string> {
  return (await fetch(server.metricsUrl)).text();
}

/** The value of the series whose line starts with `prefix` (name plus labels), or undefined. */
function series(text: string, prefix: string): number | undefined {
  const row = text.split("\n").find((line) => line.startsWith(prefix));
  return row === undefined ? undefined : Number(row.split(" ").pop());
}

describe("response cache (real server)", () => {
  let server: RunningOperon;

  beforeAll(async () => {
    const repository = tempRepository();
    writeModel(repository, "cached", addSubModel(), {
      config: ADD_SUB_CONFIG("cached", "response_cache { enable: true }"),
    });
    writeModel(repository, "plain", addSubModel(), { config: ADD_SUB_CONFIG("plain") });
    writeModel(repository, "decoupled_cached", addSubModel(), {
      config: ADD_SUB_CONFIG(
        "decoupled_cached",
        "response_cache { enable: true }\nmodel_transaction_policy { decoupled: true }",
      ),
    });
    server = await startOperon([
      "--model-repository",
      repository,
      "--cache-config",
      `local,size=${CACHE_BYTES}`,
      "--exit-on-error=false",
      "--strict-readiness=false",
    ]);
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
  });

  it("answers a repeated request from the cache: a hit, no execution, the same outputs bit for bit", async () => {
    const first = await inferBinary(server.httpUrl, "cached", inputs(1.5));
    expect(first.status).toBe(200);
    expect(first.outputs[0]!.data.readFloatLE(0)).toBe(2.5);
    expect(first.outputs[1]!.data.readFloatLE(BATCH * 64 - 4)).toBe(0.5);
    const afterMiss = await modelStats(server.httpUrl, "cached");
    expect(afterMiss.inference_stats.cache_miss!.count).toBe(1);
    expect(afterMiss.inference_stats.cache_hit!.count).toBe(0);
    expect(afterMiss.execution_count).toBe(1);
    expect(afterMiss.inference_count).toBe(BATCH);

    const second = await inferBinary(server.httpUrl, "cached", inputs(1.5));
    expect(second.status).toBe(200);
    expect(second.outputs.map((o) => [o.name, o.datatype, o.shape])).toEqual(
      first.outputs.map((o) => [o.name, o.datatype, o.shape]),
    );
    second.outputs.forEach((output, index) => expect(output.data.equals(first.outputs[index]!.data)).toBe(true));

    const afterHit = await modelStats(server.httpUrl, "cached");
    expect(afterHit.inference_stats.cache_hit!.count).toBe(1);
    expect(afterHit.inference_stats.cache_hit!.ns).toBeGreaterThan(0);
    expect(afterHit.inference_stats.cache_miss!.count).toBe(1);
    expect(afterHit.inference_stats.cache_miss!.ns).toBeGreaterThan(0);
    // Triton: a hit is a success, but no inference, execution or compute.
    expect(afterHit.inference_stats.success!.count).toBe(2);
    expect(afterHit.execution_count).toBe(1);
    expect(afterHit.inference_count).toBe(BATCH);
    expect(afterHit.inference_stats.compute_infer!.count).toBe(1);
    expect(afterHit.batch_stats).toEqual(afterMiss.batch_stats);
  });

  it("answers a hit with the new request's id, and in any input order", async () => {
    const body = (id: string, reversed: boolean) => {
      const tensors = [
        { name: "INPUT0", datatype: "FP32", shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) },
        { name: "INPUT1", datatype: "FP32", shape: [1, 16], data: Array.from({ length: 16 }, () => 2) },
      ];
      return JSON.stringify({ id, inputs: reversed ? tensors.reverse() : tensors });
    };
    const send = async (id: string, reversed: boolean) => {
      const response = await fetch(`${server.httpUrl}/v2/models/cached/infer`, {
        method: "POST",
        body: body(id, reversed),
      });
      expect(response.status).toBe(200);
      return (await response.json()) as {
        id: string;
        model_name: string;
        model_version: string;
        outputs: Array<{ name: string; data: number[] }>;
      };
    };
    const before = await modelStats(server.httpUrl, "cached");
    const miss = await send("first", false);
    const hit = await send("second", true);
    expect(miss.id).toBe("first");
    expect(hit.id).toBe("second");
    expect(hit.model_name).toBe("cached");
    expect(hit.model_version).toBe("1");
    expect(hit.outputs).toEqual(miss.outputs);
    expect(hit.outputs[0]!.data[15]).toBe(17);
    const after = await modelStats(server.httpUrl, "cached");
    expect(after.inference_stats.cache_hit!.count - before.inference_stats.cache_hit!.count).toBe(1);
    expect(after.inference_stats.cache_miss!.count - before.inference_stats.cache_miss!.count).toBe(1);
    expect(after.execution_count - before.execution_count).toBe(1);
  });

  it("misses for a different input byte, shape or requested outputs", async () => {
    await inferBinary(server.httpUrl, "cached", inputs(1.5)); // cached by the first test; make it the most recent
    const before = await modelStats(server.httpUrl, "cached");

    const oneByteOff = inputs(1.5);
    oneByteOff[1]!.data.writeFloatLE(1.0000001, (BATCH * 16 - 1) * 4);
    const changed = await inferBinary(server.httpUrl, "cached", oneByteOff);
    expect(changed.status).toBe(200);
    expect(changed.outputs[0]!.data.readFloatLE(BATCH * 64 - 4)).toBeCloseTo(2.5000001, 6);

    const onlyOutput1 = await fetch(`${server.httpUrl}/v2/models/cached/infer`, {
      method: "POST",
      body: JSON.stringify({
        inputs: [
          { name: "INPUT0", datatype: "FP32", shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) },
          { name: "INPUT1", datatype: "FP32", shape: [1, 16], data: Array.from({ length: 16 }, () => 2) },
        ],
        outputs: [{ name: "OUTPUT1" }],
      }),
    });
    const json = (await onlyOutput1.json()) as { outputs: Array<{ name: string; data: number[] }> };
    expect(json.outputs.map((output) => output.name)).toEqual(["OUTPUT1"]);
    expect(json.outputs[0]!.data[15]).toBe(13);

    const after = await modelStats(server.httpUrl, "cached");
    expect(after.inference_stats.cache_miss!.count - before.inference_stats.cache_miss!.count).toBe(2);
    expect(after.inference_stats.cache_hit!.count - before.inference_stats.cache_hit!.count).toBe(0);
    expect(after.execution_count - before.execution_count).toBe(2);
  });

  it("evicts the least recently used response when more distinct responses arrive than fit", async () => {
    const hits = async () => (await modelStats(server.httpUrl, "cached")).inference_stats.cache_hit!.count;
    const executions = async () => (await modelStats(server.httpUrl, "cached")).execution_count;
    for (const value of [100, 200, 300])
      expect((await inferBinary(server.httpUrl, "cached", inputs(value))).status).toBe(200);
    // Two fit: 100 was evicted; 200 and 300 are cached.
    let text = await metricsText(server);
    expect(series(text, "operon_cache_entries")).toBe(2);
    expect(series(text, "operon_cache_bytes")).toBeGreaterThan(2 * 2 * BATCH * 64);
    expect(series(text, "operon_cache_bytes")).toBeLessThanOrEqual(CACHE_BYTES);

    let hitCount = await hits();
    let executionCount = await executions();
    const again300 = await inferBinary(server.httpUrl, "cached", inputs(300));
    expect(again300.outputs[0]!.data.readFloatLE(0)).toBe(301);
    expect(await hits()).toBe(hitCount + 1);
    expect(await executions()).toBe(executionCount);

    hitCount = await hits();
    const again100 = await inferBinary(server.httpUrl, "cached", inputs(100));
    expect(again100.outputs[0]!.data.readFloatLE(0)).toBe(101);
    expect(await hits()).toBe(hitCount); // a miss again: it ran
    expect(await executions()).toBe(executionCount + 1);

    // Inserting 100 evicted 200 (least recently used), not 300 (just hit).
    executionCount = await executions();
    await inferBinary(server.httpUrl, "cached", inputs(300));
    expect(await executions()).toBe(executionCount);
    await inferBinary(server.httpUrl, "cached", inputs(200));
    expect(await executions()).toBe(executionCount + 1);
    text = await metricsText(server);
    expect(series(text, "operon_cache_entries")).toBe(2);
  });

  it("never caches for a model without response_cache", async () => {
    for (let i = 0; i < 3; i += 1) expect((await inferBinary(server.httpUrl, "plain", inputs(7))).status).toBe(200);
    const stats = await modelStats(server.httpUrl, "plain");
    expect(stats.execution_count).toBe(3);
    expect(stats.inference_stats.success!.count).toBe(3);
    expect(stats.inference_stats.cache_hit).toEqual({ count: 0, ns: 0 });
    expect(stats.inference_stats.cache_miss).toEqual({ count: 0, ns: 0 });
    const text = await metricsText(server);
    expect(text).not.toMatch(/nv_cache_num_(hits|misses)_per_model\{model="plain"/);
  });

  it("exports Triton's cache metrics per model, in step with the statistics", async () => {
    const stats = await modelStats(server.httpUrl, "cached");
    const text = await metricsText(server);
    const labels = '{model="cached",version="1"}';
    expect(series(text, `nv_cache_num_hits_per_model${labels}`)).toBe(stats.inference_stats.cache_hit!.count);
    expect(series(text, `nv_cache_num_misses_per_model${labels}`)).toBe(stats.inference_stats.cache_miss!.count);
    expect(stats.inference_stats.cache_hit!.count).toBeGreaterThanOrEqual(4);
    const hitUs = series(text, `nv_cache_hit_duration_per_model${labels}`)!;
    const missUs = series(text, `nv_cache_miss_duration_per_model${labels}`)!;
    expect(hitUs).toBeGreaterThan(0);
    expect(missUs).toBeGreaterThan(0);
    expect(hitUs).toBeCloseTo(stats.inference_stats.cache_hit!.ns / 1000, 0);
    expect(missUs).toBeCloseTo(stats.inference_stats.cache_miss!.ns / 1000, 0);
    // Hits are successes but not inferences or executions.
    expect(series(text, `nv_inference_request_success${labels}`)).toBe(stats.inference_stats.success!.count);
    expect(series(text, `nv_inference_exec_count${labels}`)).toBe(stats.execution_count);
    expect(series(text, `nv_inference_count${labels}`)).toBe(stats.inference_count);
    expect(text).toMatch(/^# TYPE nv_cache_num_hits_per_model counter$/m);
    expect(text).toMatch(/^# TYPE operon_cache_bytes gauge$/m);
  });

  it("refuses to load a decoupled model that enables response_cache, naming the conflict", async () => {
    const response = await fetch(`${server.httpUrl}/v2/repository/index`, { method: "POST" });
    const rows = (await response.json()) as Array<{ name: string; state?: string; reason?: string }>;
    const row = rows.find((entry) => entry.name === "decoupled_cached");
    expect(row?.state).toBe("UNAVAILABLE");
    expect(row?.reason).toMatch(/response_cache: response cache is not supported for decoupled models/);
    expect(server.output()).toMatch(/decoupled_cached/);
  });

  it("operon perf -f adds perf_analyzer's Server Cache Hit / Miss columns for a model with the response cache on", async () => {
    const folder = tempRepository("operon-perf-cache-");
    const address = server.httpUrl.replace(/^http:\/\//, "");
    const perf = (model: string) =>
      runOperon([
        "perf",
        "-m",
        model,
        "-u",
        address,
        "--request-count",
        "30",
        "-f",
        join(folder, `${model}.csv`),
        "--profile-export-file",
        join(folder, `${model}.json`),
      ]);
    const run = await perf("cached");
    expect(run.code, run.stderr).toBe(0);
    const [header, row] = readFileSync(join(folder, "cached.csv"), "utf8").split("\n");
    expect(header).toBe(
      "Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,Server Compute Infer,Server Compute Output,Server Cache Hit,Server Cache Miss,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency",
    );
    const report = parsePerfReport(JSON.parse(readFileSync(join(folder, "cached.json"), "utf8")));
    expect(report.config.responseCache).toBe(true);
    const stats = report.steps[0]!.server!;
    // Every request has the same (zero) inputs: past perf's warm-up the cache answers them.
    expect(stats.cacheHits).toBeGreaterThan(0);
    const cells = row!.split(",");
    expect(cells).toHaveLength(15);
    expect(Number(cells[8])).toBe(Math.trunc(stats.cacheHitUs!));
    expect(Number(cells[9])).toBe(Math.trunc(stats.cacheMissUs!));
    // (A model without the cache keeps perf_analyzer's usual columns: perf-cli.test.ts checks that header.)
  }, 120_000);
});

describe("response cache flags and defaults (real server)", () => {
  it("serves uncached, with a warning at load, when a model enables response_cache but the server has no cache", async () => {
    const repository = tempRepository();
    writeModel(repository, "cached", addSubModel(), {
      config: ADD_SUB_CONFIG("cached", "response_cache { enable: true }"),
    });
    const server = await startOperon(["--model-repository", repository]);
    try {
      expect(server.output()).toMatch(/model enables response_cache but the server has no response cache/);
      for (let i = 0; i < 2; i += 1) expect((await inferBinary(server.httpUrl, "cached", inputs(3))).status).toBe(200);
      const stats = await modelStats(server.httpUrl, "cached");
      expect(stats.execution_count).toBe(2);
      expect(stats.inference_stats.cache_hit!.count).toBe(0);
      expect(stats.inference_stats.cache_miss!.count).toBe(0);
      const text = await metricsText(server);
      expect(series(text, "operon_cache_entries")).toBe(0);
      expect(text).not.toMatch(/nv_cache_num_hits_per_model\{/);
    } finally {
      await server.stop();
    }
  }, 60_000);

  it("rejects malformed --cache-config values", async () => {
    const repository = tempRepository();
    for (const [value, message] of [
      ["local", /expected '<cache>,<key>=<value>'/],
      ["local,size=abc", /size 'abc' is not a positive number of bytes/],
      ["local,size=0", /size '0' is not a positive number of bytes/],
      ["local,bytes=10", /unknown setting 'bytes'/],
      ["redis,host=localhost", /'redis' cache is not supported/],
      ["memcached,size=10", /unknown cache 'memcached'/],
    ] as const) {
      const result = await runOperon(["serve", "--model-repository", repository, "--cache-config", value]);
      expect(result.code, value).toBe(1);
      expect(result.stderr, value).toMatch(message);
    }
  }, 60_000);
});
