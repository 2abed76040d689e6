import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { grpcClient } from "./support/grpc-client.js";
import { ADD_SUB_CONFIG, addSubModel, writeModel } from "./support/model-fixtures.js";
import { startOperon, tempRepository, type RunningOperon } from "./support/operon-process.js";

/**
 * Triton's trace extension through the real `operon serve`, on
 * OpenTelemetry: the settings API (global and per model, HTTP and gRPC),
 * sampling by trace_rate / trace_count, W3C traceparent continued, and the
 * spans exported over OTLP/HTTP to a collector this test runs on loopback.
 * Tests run in order against one server.
 */

interface ExportedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  startTimeUnixNano?: string;
  endTimeUnixNano?: string;
  attributes?: Array<{ key: string; value: Record<string, unknown> }>;
}

let server: RunningOperon;
let collector: http.Server;
const spans: ExportedSpan[] = [];

beforeAll(async () => {
  collector = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
        resourceSpans: Array<{ scopeSpans: Array<{ spans: ExportedSpan[] }> }>;
      };
      for (const resource of body.resourceSpans) for (const scope of resource.scopeSpans) spans.push(...scope.spans);
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end("{}");
    });
  });
  await new Promise<void>((resolve) => collector.listen(0, "127.0.0.1", resolve));
  const port = (collector.address() as AddressInfo).port;
  const repository = tempRepository("operon-e2e-trace-");
  writeModel(repository, "add_sub", addSubModel(), { config: ADD_SUB_CONFIG() });
  // A TypeScript model (in a worker process) that answers the traceparent the gateway handed it.
  mkdirSync(join(repository, "trace_echo", "1"), { recursive: true });
  writeFileSync(
    join(repository, "trace_echo", "config.pbtxt"),
    `name: "trace_echo"
backend: "typescript"
max_batch_size: 0
input [ { name: "X", data_type: TYPE_FP32, dims: [ 1 ] } ]
output [ { name: "TRACEPARENT", data_type: TYPE_STRING, dims: [ 1 ] } ]
`,
  );
  writeFileSync(
    join(repository, "trace_echo", "1", "model.ts"),
    `export default class TraceEcho {
  execute(requests, ctx) {
    return requests.map((request) => ({
      outputs: [ctx.tensor.bytes("TRACEPARENT", [1], [String(request.parameters.traceparent ?? "")])],
    }));
  }
}
`,
  );
  // A one-step ensemble over add_sub: an operator, whose trace has a span per step.
  mkdirSync(join(repository, "add_sub_ensemble", "1"), { recursive: true });
  writeFileSync(
    join(repository, "add_sub_ensemble", "config.pbtxt"),
    `name: "add_sub_ensemble"
platform: "ensemble"
max_batch_size: 8
input [ { name: "A", data_type: TYPE_FP32, dims: [ 16 ] }, { name: "B", data_type: TYPE_FP32, dims: [ 16 ] } ]
output [ { name: "SUM", data_type: TYPE_FP32, dims: [ 16 ] } ]
ensemble_scheduling { step [ { model_name: "add_sub" model_version: -1 input_map { key: "INPUT0" value: "A" } input_map { key: "INPUT1" value: "B" } output_map { key: "OUTPUT0" value: "SUM" } } ] }
`,
  );
  server = await startOperon([
    "--model-repository",
    repository,
    "--trace-config",
    "mode=opentelemetry",
    "--trace-config",
    `opentelemetry,url=http://127.0.0.1:${port}/v1/traces`,
    "--trace-config",
    "opentelemetry,bsp_schedule_delay=100",
  ]);
});

afterAll(async () => {
  await server?.stop();
  await new Promise<void>((resolve) => collector?.close(() => resolve()));
});

const url = (path: string): string => `${server.httpUrl}${path}`;
const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

async function infer(headers: Record<string, string> = {}, model = "add_sub"): Promise<void> {
  const [a, b] = model === "add_sub" ? ["INPUT0", "INPUT1"] : ["A", "B"];
  const response = await fetch(url(`/v2/models/${model}/infer`), {
    method: "POST",
    headers: { "Content-Type": "application/json", ...headers },
    body: JSON.stringify({
      id: "traced-1",
      inputs: [
        { name: a, datatype: "FP32", shape: [1, 16], data: range(16) },
        { name: b, datatype: "FP32", shape: [1, 16], data: range(16) },
      ],
    }),
  });
  expect(response.status).toBe(200);
}

async function setting(path: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(url(path), {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function spansOf(traceId: string, atLeast: number): Promise<ExportedSpan[]> {
  for (let i = 0; i < 60; i++) {
    const found = spans.filter((span) => span.traceId === traceId);
    if (found.length >= atLeast) return found;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return spans.filter((span) => span.traceId === traceId);
}

const traceId = (n: number): string => n.toString(16).padStart(32, "a");

describe("the trace extension", () => {
  it("starts OFF with Triton's defaults and exports nothing", async () => {
    const response = await fetch(url("/v2/trace/setting"));
    expect(await response.json()).toEqual({
      trace_level: ["OFF"],
      trace_rate: "1000",
      trace_count: "-1",
      log_frequency: "0",
      trace_file: "",
      trace_mode: "opentelemetry",
    });
    await infer({ traceparent: `00-${traceId(1)}-00f067aa0ba902b7-01` });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(spans.filter((span) => span.traceId === traceId(1))).toEqual([]);
  });

  it("traces a model's requests once its level is set, continuing the client's traceparent", async () => {
    const changed = await setting("/v2/models/add_sub/trace/setting", { trace_level: ["TIMESTAMPS"], trace_rate: "1" });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ trace_level: ["TIMESTAMPS"], trace_rate: "1" });
    // The global settings are unchanged.
    expect(await (await fetch(url("/v2/trace/setting"))).json()).toMatchObject({ trace_level: ["OFF"] });
    await infer({ traceparent: `00-${traceId(2)}-00f067aa0ba902b7-01` });
    const found = await spansOf(traceId(2), 7);
    const root = found.find((span) => span.name === "HTTP infer add_sub");
    expect(root).toBeDefined();
    expect(root!.parentSpanId).toBe("00f067aa0ba902b7");
    const children = found.filter((span) => span.parentSpanId === root!.spanId).map((span) => span.name);
    expect(children.sort()).toEqual(["decode request", "engine (queue + compute)"]);
    // The engine's span holds the queue and compute phases the statistics time, laid end to end inside it.
    const engine = found.find((span) => span.name === "engine (queue + compute)")!;
    const phases = found.filter((span) => span.parentSpanId === engine.spanId);
    expect(phases.map((span) => span.name)).toEqual(["queue", "compute input", "compute infer", "compute output"]);
    for (const [before, after] of phases.slice(0, -1).map((span, i) => [span, phases[i + 1]!] as const)) {
      expect(BigInt(before.endTimeUnixNano!)).toBe(BigInt(after.startTimeUnixNano!));
    }
    expect(BigInt(phases[0]!.startTimeUnixNano!)).toBeGreaterThanOrEqual(BigInt(engine.startTimeUnixNano!));
  });

  it("hands the engine span's traceparent to a backend in a worker process, so its own spans join the trace", async () => {
    const changed = await setting("/v2/models/trace_echo/trace/setting", {
      trace_level: ["TIMESTAMPS"],
      trace_rate: "1",
    });
    expect(changed.status).toBe(200);
    const response = await fetch(url("/v2/models/trace_echo/infer"), {
      method: "POST",
      headers: { "Content-Type": "application/json", traceparent: `00-${traceId(4)}-00f067aa0ba902b7-01` },
      body: JSON.stringify({ inputs: [{ name: "X", datatype: "FP32", shape: [1], data: [1] }] }),
    });
    expect(response.status).toBe(200);
    const answered = ((await response.json()) as { outputs: Array<{ data: string[] }> }).outputs[0]!.data[0]!;
    const found = await spansOf(traceId(4), 7);
    const engine = found.find((span) => span.name === "engine (queue + compute)")!;
    expect(answered).toBe(`00-${traceId(4)}-${engine.spanId}-01`);
    await setting("/v2/models/trace_echo/trace/setting", { trace_level: null, trace_rate: null });
    // Untraced, the model sees no traceparent.
    const untraced = await fetch(url("/v2/models/trace_echo/infer"), {
      method: "POST",
      body: JSON.stringify({ inputs: [{ name: "X", datatype: "FP32", shape: [1], data: [1] }] }),
    });
    expect(((await untraced.json()) as { outputs: Array<{ data: string[] }> }).outputs[0]!.data).toEqual([""]);
  });

  it("an operator's trace has a span per step, inside the engine's span, naming the step's model", async () => {
    const changed = await setting("/v2/models/add_sub_ensemble/trace/setting", {
      trace_level: ["TIMESTAMPS"],
      trace_rate: "1",
    });
    expect(changed.status).toBe(200);
    await infer({ traceparent: `00-${traceId(3)}-00f067aa0ba902b7-01` }, "add_sub_ensemble");
    const found = await spansOf(traceId(3), 8);
    const engine = found.find((span) => span.name === "engine (queue + compute)")!;
    const step = found.find((span) => span.name.startsWith("step "));
    expect(step).toBeDefined();
    expect(step!.parentSpanId).toBe(engine.spanId);
    const attributes = Object.fromEntries((step!.attributes ?? []).map((a) => [a.key, a.value["stringValue"]]));
    expect(attributes).toMatchObject({ "operon.model": "add_sub", "operon.step.status": "ok" });
    expect(BigInt(step!.endTimeUnixNano!)).toBeGreaterThanOrEqual(BigInt(step!.startTimeUnixNano!));
    await setting("/v2/models/add_sub_ensemble/trace/setting", { trace_level: null, trace_rate: null });
  });

  it("samples one request in trace_rate and stops after trace_count", async () => {
    expect((await setting("/v2/models/add_sub/trace/setting", { trace_rate: "2", trace_count: "2" })).status).toBe(200);
    for (let i = 10; i < 16; i++) await infer({ traceparent: `00-${traceId(i)}-00f067aa0ba902b7-01` });
    await new Promise((resolve) => setTimeout(resolve, 800));
    const traced = range(6).filter((i) => spans.some((span) => span.traceId === traceId(10 + i)));
    // Every second request, two traces, then the count is used up.
    expect(traced).toEqual([1, 3]);
  });

  it("a null clears a model's own setting; bad values are refused and change nothing", async () => {
    const cleared = await setting("/v2/models/add_sub/trace/setting", {
      trace_level: null,
      trace_rate: null,
      trace_count: null,
    });
    expect(cleared.body).toMatchObject({ trace_level: ["OFF"], trace_rate: "1000", trace_count: "-1" });
    for (const [body, status, message] of [
      [{ trace_level: ["LOUD"] }, 400, /trace_level must be a list of OFF, TIMESTAMPS, TENSORS/],
      [{ trace_level: ["OFF", "TIMESTAMPS"] }, 400, /OFF cannot be combined/],
      [{ trace_rate: "0" }, 400, /trace_rate must be an integer of at least 1/],
      [{ trace_rate: "1e3" }, 400, /trace_rate must be an integer/],
      [{ trace_count: "-2" }, 400, /trace_count must be an integer of at least -1/],
      [{ trace_file: "/etc/passwd" }, 501, /trace_file cannot be set/],
      [{ trace_mode: "triton" }, 501, /only be opentelemetry/],
      [{ loudness: "1" }, 400, /unknown trace setting 'loudness'/],
      [{ trace_rate: null }, 400, /null only clears a model's own setting/],
    ] as const) {
      const answer = await setting("/v2/trace/setting", body);
      expect(answer.status, JSON.stringify(body)).toBe(status);
      expect(String(answer.body["error"])).toMatch(message);
    }
    expect(await (await fetch(url("/v2/trace/setting"))).json()).toMatchObject({
      trace_level: ["OFF"],
      trace_rate: "1000",
    });
  });

  it("gRPC TraceSetting changes the same settings; TENSORS adds the tensors to the request span", async () => {
    const rpc = grpcClient(server.grpcAddress);
    try {
      const answer = await rpc.call("TraceSetting", {
        model_name: "add_sub",
        settings: { trace_level: { value: ["TENSORS"] }, trace_rate: { value: ["1"] } },
      });
      expect(answer.settings["trace_level"].value).toEqual(["TENSORS"]);
      expect(await (await fetch(url("/v2/models/add_sub/trace/setting"))).json()).toMatchObject({
        trace_level: ["TENSORS"],
        trace_rate: "1",
      });
      // TENSORS on HTTP: the request span names the tensors' datatypes and shapes.
      await infer({ traceparent: `00-${traceId(30)}-00f067aa0ba902b7-01` });
      const root = (await spansOf(traceId(30), 3)).find((span) => span.name === "HTTP infer add_sub")!;
      const attributes = Object.fromEntries((root.attributes ?? []).map((a) => [a.key, a.value["stringValue"]]));
      expect(attributes).toMatchObject({ "operon.input.INPUT0": "FP32[1,16]", "operon.request_id": "traced-1" });
    } finally {
      rpc.close();
    }
  });

  it("gRPC ModelInfer continues the client's traceparent metadata, with the same spans as HTTP", async () => {
    const changed = await setting("/v2/models/add_sub/trace/setting", { trace_level: ["TIMESTAMPS"], trace_rate: "1" });
    expect(changed.status).toBe(200);
    const rpc = grpcClient(server.grpcAddress);
    try {
      const bytes = Buffer.from(new Float32Array(range(16)).buffer);
      const { response } = await rpc.callWithMetadata(
        "ModelInfer",
        {
          model_name: "add_sub",
          id: "grpc-traced-1",
          inputs: [
            { name: "INPUT0", datatype: "FP32", shape: [1, 16] },
            { name: "INPUT1", datatype: "FP32", shape: [1, 16] },
          ],
          raw_input_contents: [bytes, bytes],
        },
        { traceparent: `00-${traceId(40)}-00f067aa0ba902b7-01` },
      );
      expect(response.id).toBe("grpc-traced-1");
      const found = await spansOf(traceId(40), 6);
      const root = found.find((span) => span.name === "gRPC infer add_sub");
      expect(root).toBeDefined();
      expect(root!.parentSpanId).toBe("00f067aa0ba902b7");
      const attributes = Object.fromEntries((root!.attributes ?? []).map((a) => [a.key, a.value["stringValue"]]));
      expect(attributes).toMatchObject({ "operon.request_id": "grpc-traced-1" });
      const engine = found.find((span) => span.name === "engine (queue + compute)");
      expect(engine?.parentSpanId).toBe(root!.spanId);
      const phases = found.filter((span) => span.parentSpanId === engine!.spanId).map((span) => span.name);
      expect(phases).toEqual(["queue", "compute input", "compute infer", "compute output"]);

      // A malformed traceparent starts a new trace rather than failing the call.
      const before = spans.length;
      await rpc.callWithMetadata(
        "ModelInfer",
        {
          model_name: "add_sub",
          inputs: [
            { name: "INPUT0", datatype: "FP32", shape: [1, 16] },
            { name: "INPUT1", datatype: "FP32", shape: [1, 16] },
          ],
          raw_input_contents: [bytes, bytes],
        },
        { traceparent: "00-not-a-trace-01" },
      );
      for (let i = 0; i < 60 && !spans.slice(before).some((span) => span.name === "gRPC infer add_sub"); i++)
        await new Promise((resolve) => setTimeout(resolve, 100));
      const fresh = spans.slice(before).find((span) => span.name === "gRPC infer add_sub");
      expect(fresh).toBeDefined();
      expect(fresh!.parentSpanId ?? "").toBe("");
    } finally {
      rpc.close();
    }
  });
});
