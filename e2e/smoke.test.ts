import { join } from "node:path";
import * as ort from "onnxruntime-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXAMPLE_REPOSITORY, startOperon, type RunningOperon } from "./support/operon-process.js";

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
});
