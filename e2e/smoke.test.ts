import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import * as ort from "onnxruntime-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXAMPLE_REPOSITORY, REPO_ROOT, startOperon, type RunningOperon } from "./support/operon-process.js";

describe("the example repository (what npm start serves)", () => {
  let server: RunningOperon;
  beforeAll(async () => {
    server = await startOperon(["--model-repository", EXAMPLE_REPOSITORY]);
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("serves every example model READY", async () => {
    const response = await fetch(`${server.httpUrl}/v2/repository/index`, { method: "POST" });
    const index = (await response.json()) as Array<{ name: string; state: string }>;
    expect(index.map((entry) => [entry.name, entry.state])).toEqual([
      ["add_sub", "READY"],
      ["bls_scaler", "READY"],
      ["identity_bytes", "READY"],
      ["identity_native", "READY"],
      ["silero_vad", "READY"],
      ["text_direction", "READY"],
      ["text_direction_classifier", "READY"],
      ["text_direction_preprocess", "READY"],
      ["text_direction_preprocess_native", "READY"],
      ["text_direction_topk", "READY"],
      ["text_generator", "READY"],
      ["tokenizer_ts", "READY"],
    ]);
  });

  it("serves identity_native with Operon's native (Triton C++ API) identity backend", async () => {
    const data = Array.from({ length: 16 }, (_, i) => i / 2);
    const response = await fetch(`${server.httpUrl}/v2/models/identity_native/infer`, {
      method: "POST",
      body: JSON.stringify({ inputs: [{ name: "INPUT0", datatype: "FP32", shape: [1, 16], data }] }),
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as {
      outputs: Array<{ name: string; data: number[] }>;
      parameters: Record<string, unknown>;
    };
    expect(body.outputs[0]).toMatchObject({ name: "OUTPUT0", data });
    expect(body.parameters["batch_requests"]).toBe(1);
  });

  it("classifies with the MobileNetV3 model and matches ONNX Runtime's golden values", async () => {
    const data = new Array(3 * 48 * 192).fill(0.1);
    const response = await fetch(`${server.httpUrl}/v2/models/text_direction_classifier/infer`, {
      method: "POST",
      body: JSON.stringify({ inputs: [{ name: "x", datatype: "FP32", shape: [1, 3, 48, 192], data }] }),
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { outputs: Array<{ name: string; shape: number[]; data: number[] }> };
    expect(body.outputs[0]!.shape).toEqual([1, 2]);
    expect(body.outputs[0]!.data[0]).toBeCloseTo(0.5065, 3);
    expect(body.outputs[0]!.data[1]).toBeCloseTo(0.4935, 3);
  });

  it("serves Silero VAD as a sequence model (state kept in the server) and matches in-process ONNX Runtime", async () => {
    const config = (await (await fetch(`${server.httpUrl}/v2/models/silero_vad/config`)).json()) as {
      max_batch_size: number;
      input: Array<{ name: string; data_type: string; dims: number[] }>;
    };
    expect(config.max_batch_size).toBe(0);
    // Auto-completed from the ONNX file, without the implicit state "state" (the server feeds it).
    expect(config.input.map((input) => [input.name, input.data_type])).toEqual([
      ["input", "TYPE_FP32"],
      ["sr", "TYPE_INT64"],
    ]);
    const response = await fetch(`${server.httpUrl}/v2/models/silero_vad/infer`, {
      method: "POST",
      body: JSON.stringify({
        parameters: { sequence_id: 1, sequence_start: true, sequence_end: true },
        inputs: [
          { name: "input", datatype: "FP32", shape: [1, 512], data: new Array(512).fill(0.01) },
          { name: "sr", datatype: "INT64", shape: [], data: [16000] },
        ],
        outputs: [{ name: "output" }],
      }),
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { outputs: Array<{ name: string; data: number[] }> };
    expect(body.outputs.map((output) => output.name)).toEqual(["output"]);
    // The same model run in-process by onnxruntime-node is the reference.
    const weights = join(EXAMPLE_REPOSITORY, "silero_vad/1/model.onnx");
    const session = await ort.InferenceSession.create(weights);
    const reference = await session.run({
      input: new ort.Tensor("float32", new Float32Array(512).fill(0.01), [1, 512]),
      state: new ort.Tensor("float32", new Float32Array(256), [2, 1, 128]),
      sr: new ort.Tensor("int64", BigInt64Array.from([16000n]), []),
    });
    expect(body.outputs[0]!.data[0]).toBe((reference.output!.data as Float32Array)[0]);
    await session.release();
  });

  it("examples/audio/vad-stream.mjs streams the bundled hello.wav and prints what ONNX Runtime computes chunk by chunk", async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [join(REPO_ROOT, "examples/audio/vad-stream.mjs"), "--url", server.httpUrl, "--id", "4242"],
      { timeout: 60_000 },
    );
    const lines = stdout.split("\n").filter((line) => line !== "");
    const printed = lines.map((line) => {
      const match = /^ *(\d+\.\d\d) s {2}(\d\.\d{3}) {2}#*$/.exec(line);
      expect(match, line).not.toBeNull();
      return { at: Number(match![1]), probability: Number(match![2]) };
    });
    // The reference: hello.wav's samples through the model in process, its state carried by hand, with the
    // script's framing (512-sample chunks, the previous chunk's last 64 samples in front).
    const samples = wavSamples(join(REPO_ROOT, "examples/audio/hello.wav"));
    const chunks = Math.floor(samples.length / 512);
    expect(printed.length).toBe(chunks);
    const session = await ort.InferenceSession.create(join(EXAMPLE_REPOSITORY, "silero_vad/1/model.onnx"));
    let state = new ort.Tensor("float32", new Float32Array(256), [2, 1, 128]);
    const expected: number[] = [];
    for (let index = 0; index < chunks; index++) {
      const chunk = new Float32Array(576);
      if (index > 0) chunk.set(samples.subarray(index * 512 - 64, index * 512), 0);
      chunk.set(samples.subarray(index * 512, index * 512 + 512), 64);
      const out = await session.run({
        input: new ort.Tensor("float32", chunk, [1, 576]),
        state,
        sr: new ort.Tensor("int64", BigInt64Array.from([16000n]), []),
      });
      expected.push((out.output!.data as Float32Array)[0]!);
      state = out.stateN as ort.Tensor;
    }
    await session.release();
    expect(printed.map((line) => line.probability)).toEqual(expected.map((p) => Number(p.toFixed(3))));
    expect(printed.map((line) => line.at)).toEqual(expected.map((_, i) => Number(((i * 512) / 16000).toFixed(2))));
    // hello.wav is speech with 0.5 s of silence around it: the model hears both.
    expect(printed[0]!.probability).toBeLessThan(0.2);
    expect(Math.max(...printed.map((line) => line.probability))).toBeGreaterThan(0.8);
  });
});

/** The samples of a 16 kHz mono 16-bit PCM WAV (hello.wav), as floats in [-1, 1), as the example reads them. */
function wavSamples(path: string): Float32Array {
  const bytes = readFileSync(path);
  for (let at = 12; at + 8 <= bytes.length; ) {
    const size = bytes.readUInt32LE(at + 4);
    if (bytes.toString("ascii", at, at + 4) === "data") {
      const out = new Float32Array(size >> 1);
      for (let i = 0; i < out.length; i++) out[i] = bytes.readInt16LE(at + 8 + i * 2) / 32768;
      return out;
    }
    at += 8 + size + (size & 1);
  }
  throw new Error(`${path}: no data chunk`);
}
