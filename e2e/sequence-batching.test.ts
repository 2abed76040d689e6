import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as ort from "onnxruntime-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { float32Buffer, inferBinary } from "./support/http-binary-client.js";
import { addSubModel, writeModel } from "./support/model-fixtures.js";
import {
  EXAMPLE_REPOSITORY,
  REPO_ROOT,
  startOperon,
  tempRepository,
  workerProcesses,
  type RunningOperon,
} from "./support/operon-process.js";

/**
 * The sequence batcher (stateful models) through the real server, with
 * real clients: HTTP JSON, HTTP binary, and Python grpcio over
 * ModelStreamInfer / ModelInfer.
 *
 * - silero_vad, the shipped example, streams audio by correlation id with
 *   its recurrent state kept in the server; its outputs must equal ONNX
 *   Runtime run in this process chunk by chunk, for several streams at
 *   once (more than its slots: the backlog).
 * - accumulator: add_sub with implicit state (INPUT1 <- OUTPUT0), oldest
 *   strategy, joined batches of several sequences.
 * - probe_*: a TypeScript model that answers the control inputs it got
 *   (START int32, END fp32, READY bool, CORRID uint64 / string) and keeps a
 *   running sum in its implicit state.
 */
const SILERO = join(EXAMPLE_REPOSITORY, "silero_vad/1/model.onnx");

const PROBE_MODEL = `
export default class Probe {
  execute(requests, ctx) {
    return requests.map((request) => {
      const input = request.input("INPUT");
      const x = input.toFloat32Array()[0];
      if (x === 666) process.exit(3);
      if (x === 13) return ctx.error("INVALID_ARG", "13 is unlucky");
      const acc = request.input("ACC_IN").toFloat32Array()[0];
      const start = request.input("START").toInt32Array()[0];
      const end = request.input("END").toFloat32Array()[0];
      const ready = request.input("READY").toUint8Array()[0];
      const cid = request.input("CORRID");
      const corrid = cid.datatype === "BYTES" ? cid.toStrings()[0] : cid.toBigUint64Array()[0].toString();
      const batched = input.shape.length === 2;
      return {
        outputs: [
          ctx.tensor.float32("OUTPUT", batched ? [1, 4] : [4], [acc + x, start, end, ready]),
          ctx.tensor.bytes("CORRID_SEEN", batched ? [1, 1] : [1], [corrid]),
          ctx.tensor.float32("ACC_OUT", batched ? [1, 1] : [1], [acc + x]),
        ],
      };
    });
  }
}
`;

function probeModel(
  repository: string,
  name: string,
  options: { maxBatchSize: number; corrid: string; batcher: string },
) {
  const dir = join(repository, name);
  mkdirSync(join(dir, "1"), { recursive: true });
  writeFileSync(join(dir, "1", "model.mjs"), PROBE_MODEL);
  writeFileSync(
    join(dir, "config.pbtxt"),
    `name: "${name}"
backend: "typescript"
max_batch_size: ${options.maxBatchSize}
input [ { name: "INPUT", data_type: TYPE_FP32, dims: [ 1 ] } ]
output [
  { name: "OUTPUT", data_type: TYPE_FP32, dims: [ 4 ] },
  { name: "CORRID_SEEN", data_type: TYPE_STRING, dims: [ 1 ] }
]
instance_group [ { count: 1, kind: KIND_CPU } ]
sequence_batching {
  ${options.batcher}
  control_input [
    { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] },
    { name: "END" control [ { kind: CONTROL_SEQUENCE_END fp32_false_true: [ 0, 1 ] } ] },
    { name: "READY" control [ { kind: CONTROL_SEQUENCE_READY bool_false_true: [ false, true ] } ] },
    { name: "CORRID" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: ${options.corrid} } ] }
  ]
  state [ { input_name: "ACC_IN" output_name: "ACC_OUT" data_type: TYPE_FP32 dims: [ 1 ] initial_state { name: "ten" data_type: TYPE_FP32 dims: [ 1 ] data_file: "ten.bin" } } ]
}`,
  );
  mkdirSync(join(dir, "initial_state"), { recursive: true });
  writeFileSync(join(dir, "initial_state", "ten.bin"), float32Buffer(10, 1));
}

interface JsonResponse {
  status: number;
  body: { outputs?: Array<{ name: string; shape: number[]; data: Array<number | string> }>; error?: string };
}

async function inferJson(
  server: RunningOperon,
  model: string,
  inputs: Array<{ name: string; datatype: string; shape: number[]; data: unknown[] }>,
  parameters: Record<string, unknown>,
): Promise<JsonResponse> {
  const response = await fetch(`${server.httpUrl}/v2/models/${model}/infer`, {
    method: "POST",
    body: JSON.stringify({ parameters, inputs }),
  });
  return { status: response.status, body: (await response.json()) as JsonResponse["body"] };
}

function probe(server: RunningOperon, model: string, x: number, parameters: Record<string, unknown>, batched = true) {
  return inferJson(
    server,
    model,
    [{ name: "INPUT", datatype: "FP32", shape: batched ? [1, 1] : [1], data: [x] }],
    parameters,
  );
}

/** Deterministic "audio": a tone whose pitch and loudness differ per stream, with noise. */
function audioChunks(stream: number, count: number): Float32Array[] {
  let seed = 1234 + stream * 7919;
  const random = (): number => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31 - 0.5;
  };
  return Array.from({ length: count }, (_, chunk) => {
    const samples = new Float32Array(512);
    for (let i = 0; i < 512; i += 1) {
      const t = (chunk * 512 + i) / 16000;
      samples[i] = (0.3 + 0.1 * stream) * Math.sin(2 * Math.PI * (180 + 60 * stream) * t) + 0.05 * random();
    }
    return samples;
  });
}

/** Silero run in this process, chunk by chunk, carrying the state itself: the reference. */
async function referenceProbabilities(session: ort.InferenceSession, chunks: Float32Array[]): Promise<number[]> {
  let state = new ort.Tensor("float32", new Float32Array(256), [2, 1, 128]);
  const out: number[] = [];
  for (const chunk of chunks) {
    const result = await session.run({
      input: new ort.Tensor("float32", chunk, [1, 512]),
      state,
      sr: new ort.Tensor("int64", BigInt64Array.from([16000n]), []),
    });
    out.push((result.output!.data as Float32Array)[0]!);
    state = result.stateN as ort.Tensor;
  }
  return out;
}

describe("sequence batching (real server, real clients)", () => {
  let server: RunningOperon;
  let session: ort.InferenceSession;

  beforeAll(async () => {
    const repository = tempRepository();
    const silero = join(repository, "silero_vad");
    mkdirSync(join(silero, "1"), { recursive: true });
    symlinkSync(SILERO, join(silero, "1", "model.onnx"));
    writeFileSync(join(silero, "config.pbtxt"), readFileSync(join(EXAMPLE_REPOSITORY, "silero_vad/config.pbtxt")));
    writeModel(repository, "accumulator", addSubModel(), {
      config: `name: "accumulator"
backend: "onnxruntime"
max_batch_size: 8
input [ { name: "INPUT0", data_type: TYPE_FP32, dims: [ 16 ] } ]
output [ { name: "OUTPUT1", data_type: TYPE_FP32, dims: [ 16 ] } ]
instance_group [ { count: 1, kind: KIND_CPU } ]
sequence_batching {
  oldest { max_candidate_sequences: 8 max_queue_delay_microseconds: 200000 preferred_batch_size: [ 4 ] }
  state [ { input_name: "INPUT1" output_name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]
}`,
    });
    probeModel(repository, "probe_u64", {
      maxBatchSize: 2,
      corrid: "TYPE_UINT64",
      batcher: "direct { } max_sequence_idle_microseconds: 60000000",
    });
    probeModel(repository, "probe_str", {
      maxBatchSize: 4,
      corrid: "TYPE_STRING",
      batcher: "oldest { max_candidate_sequences: 4 } max_sequence_idle_microseconds: 60000000",
    });
    probeModel(repository, "probe_idle", {
      maxBatchSize: 1,
      corrid: "TYPE_UINT64",
      batcher: "direct { } max_sequence_idle_microseconds: 300000",
    });
    probeModel(repository, "probe_one_slot", {
      maxBatchSize: 0,
      corrid: "TYPE_UINT64",
      batcher: "direct { } max_sequence_idle_microseconds: 60000000",
    });
    probeModel(repository, "probe_scale", {
      maxBatchSize: 1,
      corrid: "TYPE_UINT64",
      batcher: "direct { } max_sequence_idle_microseconds: 60000000",
    });
    probeModel(repository, "probe_crash", {
      maxBatchSize: 2,
      corrid: "TYPE_UINT64",
      batcher: "direct { } max_sequence_idle_microseconds: 60000000",
    });
    server = await startOperon(
      ["--model-repository", repository, "--model-control-mode", "explicit", "--load-model", "*"],
      {
        timeoutMs: 120_000,
      },
    );
    session = await ort.InferenceSession.create(SILERO);
  }, 180_000);

  afterAll(async () => {
    await session?.release();
    await server?.stop();
  });

  it("advertises the sequence extensions and hides the state and control tensors from the model's metadata", async () => {
    const metadata = (await (await fetch(`${server.httpUrl}/v2`)).json()) as { extensions: string[] };
    expect(metadata.extensions).toEqual(expect.arrayContaining(["sequence", "sequence(string_id)"]));
    const silero = (await (await fetch(`${server.httpUrl}/v2/models/silero_vad`)).json()) as {
      inputs: Array<{ name: string }>;
      outputs: Array<{ name: string }>;
    };
    expect(silero.inputs.map((input) => input.name)).toEqual(["input", "sr"]);
    expect(silero.outputs.map((output) => output.name)).toEqual(["output"]);
  });

  it("silero_vad: three streams at once (two slots, one waits in the backlog) match ONNX Runtime run chunk by chunk", async () => {
    const streams = [0, 1, 2].map((stream) => audioChunks(stream, 8));
    const served = await Promise.all(
      streams.map(async (chunks, stream) => {
        const probabilities: number[] = [];
        for (const [index, chunk] of chunks.entries()) {
          const response = await inferJson(
            server,
            "silero_vad",
            [
              { name: "input", datatype: "FP32", shape: [1, 512], data: Array.from(chunk) },
              { name: "sr", datatype: "INT64", shape: [], data: [16000] },
            ],
            { sequence_id: 1000 + stream, sequence_start: index === 0, sequence_end: index === chunks.length - 1 },
          );
          expect(response.status, JSON.stringify(response.body)).toBe(200);
          expect(response.body.outputs!.map((output) => output.name)).toEqual(["output"]);
          probabilities.push(response.body.outputs![0]!.data[0] as number);
        }
        return probabilities;
      }),
    );
    for (const [stream, chunks] of streams.entries()) {
      const reference = await referenceProbabilities(session, chunks);
      served[stream]!.forEach((value, index) => expect(value).toBeCloseTo(reference[index]!, 6));
    }
    // The state matters: the same chunk gives another answer once the stream has history.
    const fresh = await referenceProbabilities(session, [streams[0]![7]!]);
    expect(Math.abs(served[0]![7]! - fresh[0]!)).toBeGreaterThan(1e-4);
  });

  it("Python grpcio: ModelStreamInfer with a uint64 id beyond 2^53 and unary ModelInfer with a string id", () => {
    const python = pythonWithGrpc();
    const chunks = audioChunks(5, 6);
    const file = join(tempRepository("operon-seq-chunks-"), "chunks.json");
    writeFileSync(file, JSON.stringify(chunks.map((chunk) => Array.from(chunk))));
    const script = join(REPO_ROOT, "e2e/python/sequence_stream_check.py");
    const run = spawnSync(python, [script, server.grpcAddress, "silero_vad", file, "probe_str"], {
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(run.status, `python client failed:\n${run.stdout}\n${run.stderr}`).toBe(0);
    const result = JSON.parse(run.stdout.trim().split("\n").at(-1)!) as {
      streamed: Array<{ id: string; outputs: string[]; probability: number; error?: string }>;
      after_end: { code: string; details: string } | null;
      probe: Array<{ outputs: string[]; values: number[]; corrid: string }>;
    };
    return referenceProbabilities(session, chunks).then((reference) => {
      expect(result.streamed.map((response) => response.error)).toEqual(chunks.map(() => undefined));
      expect(result.streamed.map((response) => response.id)).toEqual(chunks.map((_, i) => `chunk-${i}`));
      result.streamed.forEach((response, index) => {
        expect(response.outputs).toEqual(["output"]);
        expect(response.probability).toBeCloseTo(reference[index]!, 6);
      });
      expect(result.after_end?.code).toBe("INVALID_ARGUMENT");
      expect(result.after_end?.details).toMatch(/sequence 1152921504606846983 .* must specify the START flag/);
      // START then END with a string id: the running sum starts from the initial state file (10).
      expect(result.probe.map((step) => step.outputs)).toEqual([
        ["OUTPUT", "CORRID_SEEN"],
        ["OUTPUT", "CORRID_SEEN"],
      ]);
      expect(result.probe.map((step) => step.values)).toEqual([
        [11.5, 1, 0, 1],
        [14, 0, 1, 1],
      ]);
      expect(result.probe.map((step) => step.corrid)).toEqual(["caller-é-42", "caller-é-42"]);
    });
  });

  it("control inputs (int32, fp32, bool, uint64 CORRID) and implicit state, sequences interleaved", async () => {
    const steps: Array<[number, number, boolean, boolean]> = [
      [7, 1, true, false],
      [8, 100, true, false],
      [7, 2, false, false],
      [8, 200, false, true],
      [7, 3, false, true],
    ];
    const results = [];
    for (const [id, x, start, end] of steps)
      results.push(await probe(server, "probe_u64", x, { sequence_id: id, sequence_start: start, sequence_end: end }));
    expect(results.map((result) => result.status)).toEqual([200, 200, 200, 200, 200]);
    expect(results.map((result) => result.body.outputs![0]!.data)).toEqual([
      [11, 1, 0, 1],
      [110, 1, 0, 1],
      [13, 0, 0, 1],
      [310, 0, 1, 1],
      [16, 0, 1, 1],
    ]);
    expect(results.map((result) => result.body.outputs![1]!.data[0])).toEqual(["7", "8", "7", "8", "7"]);
    // The state output stays in the server.
    expect(results[0]!.body.outputs!.map((output) => output.name)).toEqual(["OUTPUT", "CORRID_SEEN"]);
  });

  it("oldest strategy joins requests of different sequences into one batch; each keeps its own state", async () => {
    const before = await executions(server, "accumulator");
    const sequences = [1, 2, 3, 4];
    const run = (id: number, step: number) =>
      inferBinary(
        server.httpUrl,
        "accumulator",
        [{ name: "INPUT0", datatype: "FP32", shape: [1, 16], data: float32Buffer(id * 10 + step, 16) }],
        { parameters: { sequence_id: id, sequence_start: step === 0, sequence_end: step === 2 } },
      );
    const sums = new Map(sequences.map((id) => [id, 0]));
    for (const step of [0, 1, 2]) {
      const responses = await Promise.all(sequences.map((id) => run(id, step)));
      responses.forEach((response, index) => {
        const id = sequences[index]!;
        expect(response.status, response.error).toBe(200);
        expect(response.outputs.map((output) => output.name)).toEqual(["OUTPUT1"]);
        // OUTPUT1 = x - state, and the state is the running sum of the sequence's inputs (OUTPUT0 = x + state).
        const x = id * 10 + step;
        expect(response.outputs[0]!.data.readFloatLE(0)).toBe(x - sums.get(id)!);
        sums.set(id, sums.get(id)! + x);
      });
    }
    const after = await executions(server, "accumulator");
    expect(after.inferences - before.inferences).toBe(12);
    // Four sequences' requests at a time, preferred batch 4: three executions of four rows.
    expect(after.executions - before.executions).toBe(3);
  });

  it("a request-level backend (TypeScript) gets several sequences' rows in one execution, each with its own state", async () => {
    const ids = ["alpha", "beta", "gamma", "delta"];
    const before = await executions(server, "probe_str");
    const expected = new Map(ids.map((id) => [id, 10]));
    for (const step of [0, 1, 2]) {
      const responses = await Promise.all(
        ids.map((id, index) =>
          probe(server, "probe_str", index + step * 100, {
            sequence_id: id,
            sequence_start: step === 0,
            sequence_end: step === 2,
          }),
        ),
      );
      responses.forEach((response, index) => {
        const id = ids[index]!;
        expected.set(id, expected.get(id)! + index + step * 100);
        expect(response.status, JSON.stringify(response.body)).toBe(200);
        expect(response.body.outputs![0]!.data[0]).toBe(expected.get(id));
        expect(response.body.outputs![1]!.data[0]).toBe(id);
      });
    }
    const after = await executions(server, "probe_str");
    expect(after.inferences - before.inferences).toBe(12);
    // The first request of each round runs alone; the others join while it runs.
    expect(after.executions - before.executions).toBeLessThan(12);
  });

  it("refuses requests without an id, without START, after END, and with malformed flags, saying why", async () => {
    const noId = await probe(server, "probe_u64", 1, {});
    expect(noId.status).toBe(400);
    expect(noId.body.error).toMatch(/must specify a non-zero or non-empty correlation ID/);
    const zero = await probe(server, "probe_u64", 1, { sequence_id: 0, sequence_start: true });
    expect(zero.body.error).toMatch(/non-zero or non-empty correlation ID/);
    const noStart = await probe(server, "probe_u64", 1, { sequence_id: 4242 });
    expect(noStart.status).toBe(400);
    expect(noStart.body.error).toMatch(
      /inference request for sequence 4242 to model 'probe_u64' version 1 must specify the START flag/,
    );
    const badFlag = await probe(server, "probe_u64", 1, { sequence_id: 4243, sequence_start: "yes" });
    expect(badFlag.body.error).toMatch(/parameter 'sequence_start' must be a boolean/);
    const negative = await probe(server, "probe_u64", 1, { sequence_id: -5, sequence_start: true });
    expect(negative.body.error).toMatch(/'sequence_id' must be an unsigned 64-bit integer or a string/);
    await probe(server, "probe_u64", 1, { sequence_id: 4244, sequence_start: true, sequence_end: true });
    const afterEnd = await probe(server, "probe_u64", 1, { sequence_id: 4244 });
    expect(afterEnd.body.error).toMatch(/sequence 4244 .* must specify the START flag/);
    const stringOnNumeric = await probe(server, "probe_u64", 1, { sequence_id: "abc", sequence_start: true });
    expect(stringOnNumeric.status).toBe(400);
    expect(stringOnNumeric.body.error).toMatch(
      /CONTROL_SEQUENCE_CORRID of UINT64: the model takes numeric correlation ids/,
    );
    const sendsState = await inferJson(
      server,
      "probe_u64",
      [
        { name: "INPUT", datatype: "FP32", shape: [1, 1], data: [1] },
        { name: "ACC_IN", datatype: "FP32", shape: [1, 1], data: [1] },
      ],
      { sequence_id: 4245, sequence_start: true },
    );
    expect(sendsState.status).toBe(400);
    expect(sendsState.body.error).toMatch(/ACC_IN/);
    // A failed request leaves the sequence and its state as they were.
    await probe(server, "probe_u64", 1, { sequence_id: 4246, sequence_start: true });
    const failed = await probe(server, "probe_u64", 13, { sequence_id: 4246 });
    expect(failed.body.error).toMatch(/13 is unlucky/);
    const next = await probe(server, "probe_u64", 2, { sequence_id: 4246, sequence_end: true });
    expect(next.body.outputs![0]!.data[0]).toBe(13);
  });

  it("an idle sequence is released after max_sequence_idle_microseconds; its next request is refused clearly", async () => {
    const first = await probe(server, "probe_idle", 1, { sequence_id: 77, sequence_start: true });
    expect(first.status).toBe(200);
    const soon = await probe(server, "probe_idle", 1, { sequence_id: 77 });
    expect(soon.body.outputs![0]!.data[0]).toBe(12);
    await new Promise((resolve) => setTimeout(resolve, 700));
    const late = await probe(server, "probe_idle", 1, { sequence_id: 77 });
    expect(late.status).toBe(400);
    expect(late.body.error).toMatch(
      /sequence 77 of model 'probe_idle' version 1 was released after it was idle for longer than max_sequence_idle_microseconds \(300000 µs\)/,
    );
    // Its slot was freed: with one slot, a new sequence gets it at once.
    const other = await probe(server, "probe_idle", 5, { sequence_id: 78, sequence_start: true, sequence_end: true });
    expect(other.body.outputs![0]!.data[0]).toBe(15);
  });

  it("a sequence that finds every slot taken waits in the backlog until one is freed", async () => {
    const holder = await probe(server, "probe_one_slot", 1, { sequence_id: 1, sequence_start: true }, false);
    expect(holder.status).toBe(200);
    let waiterDone = false;
    const waiter = probe(
      server,
      "probe_one_slot",
      5,
      { sequence_id: 2, sequence_start: true, sequence_end: true },
      false,
    ).then((result) => {
      waiterDone = true;
      return result;
    });
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(waiterDone).toBe(false);
    const ended = await probe(server, "probe_one_slot", 2, { sequence_id: 1, sequence_end: true }, false);
    expect(ended.body.outputs![0]!.data).toEqual([13, 0, 1, 1]);
    const waited = await waiter;
    expect(waited.status).toBe(200);
    expect(waited.body.outputs![0]!.data).toEqual([15, 1, 1, 1]);
  });

  it("a worker crash fails the sequences it held with a clear error; new sequences run on the restarted worker", async () => {
    const started = await probe(server, "probe_crash", 1, { sequence_id: 900, sequence_start: true });
    expect(started.status).toBe(200);
    const before = workerProcesses(server.pid).find((worker) => worker.instance.startsWith("probe_crash"));
    expect(before).toBeDefined();
    const crash = await probe(server, "probe_crash", 666, { sequence_id: 901, sequence_start: true });
    expect(crash.status).toBe(503);
    const lost = await probe(server, "probe_crash", 1, { sequence_id: 900 });
    expect(lost.status).toBe(503);
    expect(lost.body.error).toMatch(
      /sequence 900 of model 'probe_crash' version 1 was lost: the worker of instance 'probe_crash_0_0' that held it exited; start the sequence again/,
    );
    // The instance restarts; a new sequence works from its initial state.
    const deadline = Date.now() + 20_000;
    let again: JsonResponse | undefined;
    while (Date.now() < deadline) {
      again = await probe(server, "probe_crash", 1, { sequence_id: 900, sequence_start: true, sequence_end: true });
      if (again.status === 200) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(again?.body.outputs![0]!.data).toEqual([11, 1, 1, 1]);
  });

  it("shrinking the pool ends the sequences of the instances removed, saying so; the others go on", async () => {
    const grow = await fetch(`${server.httpUrl}/v2/operon/models/probe_scale/instances`, {
      method: "POST",
      body: JSON.stringify({ count: 2 }),
    });
    expect(grow.status, await grow.text()).toBe(200);
    // One slot per instance: the first sequence takes instance 0, the second instance 1.
    expect((await probe(server, "probe_scale", 1, { sequence_id: 31, sequence_start: true })).status).toBe(200);
    expect((await probe(server, "probe_scale", 2, { sequence_id: 32, sequence_start: true })).status).toBe(200);
    const shrink = await fetch(`${server.httpUrl}/v2/operon/models/probe_scale/instances`, {
      method: "POST",
      body: JSON.stringify({ count: 1 }),
    });
    expect(shrink.status, await shrink.text()).toBe(200);
    const lost = await probe(server, "probe_scale", 1, { sequence_id: 32 });
    expect(lost.status).toBe(503);
    expect(lost.body.error).toMatch(
      /sequence 32 of model 'probe_scale' version 1 was lost: instance '.*' that held it was removed \(the pool was resized\)/,
    );
    const kept = await probe(server, "probe_scale", 5, { sequence_id: 31, sequence_end: true });
    expect(kept.body.outputs![0]!.data).toEqual([16, 0, 1, 1]);
  });

  it("an unload ends the sequences: a request waiting for a slot fails, naming the unload", async () => {
    const holder = await probe(server, "probe_one_slot", 1, { sequence_id: 50, sequence_start: true }, false);
    expect(holder.status).toBe(200);
    const waiting = probe(server, "probe_one_slot", 1, { sequence_id: 51, sequence_start: true }, false);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const unload = await fetch(`${server.httpUrl}/v2/repository/models/probe_one_slot/unload`, {
      method: "POST",
      body: "{}",
    });
    expect(unload.status).toBe(200);
    const result = await waiting;
    expect(result.status).toBe(503);
    expect(result.body.error).toMatch(
      /model 'probe_one_slot' version 1 is unloading: sequence 51 ended before it got a slot/,
    );
    const after = await probe(server, "probe_one_slot", 1, { sequence_id: 50 }, false);
    expect(after.status).not.toBe(200);
  });
});

async function executions(server: RunningOperon, model: string): Promise<{ inferences: number; executions: number }> {
  const stats = (await (await fetch(`${server.httpUrl}/v2/models/${model}/stats`)).json()) as {
    model_stats: Array<{ inference_count: number; execution_count: number }>;
  };
  return { inferences: stats.model_stats[0]!.inference_count, executions: stats.model_stats[0]!.execution_count };
}

/** Debian's python3-grpcio et al. install for /usr/bin/python3; a python3 on PATH may be another interpreter. */
function pythonWithGrpc(): string {
  const candidates = [process.env.OPERON_TEST_PYTHON, "/usr/bin/python3", "python3"].filter(
    (candidate): candidate is string =>
      candidate !== undefined && candidate !== "" && (!candidate.startsWith("/") || existsSync(candidate)),
  );
  for (const candidate of candidates) {
    if (spawnSync(candidate, ["-c", "import grpc, grpc_tools.protoc, numpy"], { stdio: "ignore" }).status === 0)
      return candidate;
  }
  throw new Error(
    `no python3 with grpc, grpc_tools and numpy (tried ${candidates.join(", ")}); install them with ` +
      "`apt-get install -y python3-grpcio python3-grpc-tools python3-numpy` or set OPERON_TEST_PYTHON",
  );
}
