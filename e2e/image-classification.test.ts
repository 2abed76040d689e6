import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as ort from "onnxruntime-node";
import pngjs from "pngjs";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ModelError,
  tensor,
  type ExecuteContext,
  type InitializeArgs,
  type TypedRequest,
  type TypedResponse,
} from "@operon/backend-api/typescript-model-api";
import { grpcClient } from "./support/grpc-client.js";
import { type BinaryOutput, float32Buffer, inferBinary, modelStats } from "./support/http-binary-client.js";
import {
  EXAMPLE_REPOSITORY,
  REPO_ROOT,
  startOperon,
  tempRepository,
  type RunningOperon,
} from "./support/operon-process.js";

/**
 * The image-classification example through the real server: the
 * `text_direction` Triton ensemble of examples/model_repository (PNG bytes
 * -> TypeScript preprocessing -> PP-OCR's MobileNetV3 on ONNX Runtime ->
 * TypeScript top-k with labels), over HTTP (binary_tensor_data) and gRPC,
 * checked against the same three steps called one by one through the server
 * and against an in-process reference (pngjs + the same preprocessing math +
 * onnxruntime-node on the classifier's file). The two TypeScript models'
 * own code is also run in this process, for what the server cannot show:
 * a bad image among several requests of one execute(), and k's checks.
 */
const IMAGES = join(REPO_ROOT, "examples/images");
const CLASSIFIER_FILE = join(EXAMPLE_REPOSITORY, "text_direction_classifier/1/model.onnx");
const TOPK_DIR = join(EXAMPLE_REPOSITORY, "text_direction_topk");
const LABELS = ["0°", "180°"];

const png = (name: string): Buffer => readFileSync(join(IMAGES, name));
const TEXT_0 = png("text_0.png");
const TEXT_180 = png("text_180.png");
const TEXT_GREY = png("text_grey.png");

/** Triton's BYTES wire layout: a 4-byte little-endian length before each element. */
function bytesTensor(elements: Buffer[]): Buffer {
  return Buffer.concat(
    elements.flatMap((element) => {
      const length = Buffer.alloc(4);
      length.writeUInt32LE(element.length);
      return [length, element];
    }),
  );
}

function bytesElements(data: Buffer): string[] {
  const elements: string[] = [];
  for (let offset = 0; offset < data.length; ) {
    const length = data.readUInt32LE(offset);
    elements.push(data.subarray(offset + 4, offset + 4 + length).toString("utf8"));
    offset += 4 + length;
  }
  return elements;
}

const floats = (data: Buffer): number[] => Array.from({ length: data.length / 4 }, (_, i) => data.readFloatLE(i * 4));
const output = (outputs: BinaryOutput[], name: string): BinaryOutput => {
  const found = outputs.find((o) => o.name === name);
  if (found === undefined) throw new Error(`no output '${name}' in ${outputs.map((o) => o.name).join(", ")}`);
  return found;
};

/**
 * The reference preprocessing, written out again from PP-OCR's
 * resize_norm_img: height 48, width min(192, ceil(48*w/h)), cv2.INTER_LINEAR
 * sampling rounded to 8 bits, (v/255 - 0.5)/0.5, CHW in BGR, zero padding.
 */
function referencePreprocess(file: Buffer): Float32Array {
  const image = pngjs.PNG.sync.read(file);
  const { width: w, height: h, data } = image;
  const outW = Math.min(192, Math.ceil(48 * (w / h)));
  const x = new Float32Array(3 * 48 * 192);
  const source = (position: number, size: number): [number, number, number] => {
    const p = Math.min(Math.max(position, 0), size - 1);
    const i0 = Math.floor(p);
    return i0 >= size - 1 ? [size - 1, size - 1, 0] : [i0, i0 + 1, p - i0];
  };
  for (let y = 0; y < 48; y += 1) {
    const [y0, y1, fy] = source((y + 0.5) * (h / 48) - 0.5, h);
    for (let col = 0; col < outW; col += 1) {
      const [x0, x1, fx] = source((col + 0.5) * (w / outW) - 0.5, w);
      for (const [channel, rgba] of [
        [0, 2],
        [1, 1],
        [2, 0],
      ] as const) {
        const at = (yy: number, xx: number): number => data[(yy * w + xx) * 4 + rgba]!;
        const value = Math.round(
          (at(y0, x0) * (1 - fx) + at(y0, x1) * fx) * (1 - fy) + (at(y1, x0) * (1 - fx) + at(y1, x1) * fx) * fy,
        );
        x[channel * 48 * 192 + y * 192 + col] = (value / 255 - 0.5) / 0.5;
      }
    }
  }
  return x;
}

/** Label and score of each image, computed in this process. */
async function reference(
  files: Buffer[],
): Promise<{ x: Float32Array; probabilities: number[]; labels: string[]; scores: number[] }> {
  const x = new Float32Array(files.length * 3 * 48 * 192);
  files.forEach((file, i) => x.set(referencePreprocess(file), i * 3 * 48 * 192));
  const result = await session.run({ x: new ort.Tensor("float32", x, [files.length, 3, 48, 192]) });
  const probabilities = Array.from(result["softmax_0.tmp_0"]!.data as Float32Array);
  const labels: string[] = [];
  const scores: number[] = [];
  for (let i = 0; i < files.length; i += 1) {
    const [p0, p1] = [probabilities[2 * i]!, probabilities[2 * i + 1]!];
    labels.push(p1 > p0 ? LABELS[1]! : LABELS[0]!);
    scores.push(Math.max(p0, p1));
  }
  return { x, probabilities, labels, scores };
}

function expectClose(actual: number[], expected: number[], tolerance: number): void {
  expect(actual).toHaveLength(expected.length);
  const worst = Math.max(0, ...actual.map((value, i) => Math.abs(value - expected[i]!)));
  expect(worst).toBeLessThanOrEqual(tolerance);
}

const classify = (server: RunningOperon, files: Buffer[], model = "text_direction") =>
  inferBinary(server.httpUrl, model, [
    { name: "image", datatype: "BYTES", shape: [files.length, 1], data: bytesTensor(files) },
  ]);

let session: ort.InferenceSession;

describe("image classification: the text_direction ensemble (real server)", () => {
  let server: RunningOperon;

  beforeAll(async () => {
    // The top-k model again, with k = 2, and with a k it must refuse: same code and labels, other configs.
    const extra = tempRepository("operon-e2e-topk-");
    const topk = (name: string, k: string, dims: string): void => {
      mkdirSync(join(extra, name, "1"), { recursive: true });
      copyFileSync(join(TOPK_DIR, "1/model.ts"), join(extra, name, "1/model.ts"));
      copyFileSync(join(TOPK_DIR, "labels.txt"), join(extra, name, "labels.txt"));
      writeFileSync(
        join(extra, name, "config.pbtxt"),
        `name: "${name}"
backend: "typescript"
max_batch_size: 8
input [ { name: "probabilities", data_type: TYPE_FP32, dims: [ 2 ] } ]
output [
  { name: "label", data_type: TYPE_STRING, dims: [ ${dims} ] },
  { name: "score", data_type: TYPE_FP32, dims: [ ${dims} ] }
]
parameters { key: "k" value { string_value: "${k}" } }
`,
      );
    };
    topk("text_direction_top2", "2", "-1");
    topk("text_direction_top3", "3", "-1");
    [server, session] = await Promise.all([
      startOperon([
        "--model-repository",
        EXAMPLE_REPOSITORY,
        "--model-repository",
        extra,
        "--exit-on-error=false",
        "--strict-readiness=false",
      ]),
      ort.InferenceSession.create(CLASSIFIER_FILE),
    ]);
  });

  afterAll(async () => {
    await server?.stop();
    await session?.release();
  });

  it("serves the ensemble and its three steps READY, with the ensemble's metadata", async () => {
    const index = (await (await fetch(`${server.httpUrl}/v2/repository/index`, { method: "POST" })).json()) as Array<{
      name: string;
      state: string;
    }>;
    const state = (name: string): string | undefined => index.find((row) => row.name === name)?.state;
    for (const name of [
      "text_direction",
      "text_direction_preprocess",
      "text_direction_classifier",
      "text_direction_topk",
    ])
      expect(state(name)).toBe("READY");
    const metadata = (await (await fetch(`${server.httpUrl}/v2/models/text_direction`)).json()) as any;
    expect(metadata.platform).toBe("ensemble");
    expect(metadata.inputs).toEqual([{ name: "image", datatype: "BYTES", shape: [-1, 1] }]);
    expect(metadata.outputs).toEqual([
      { name: "label", datatype: "BYTES", shape: [-1, 1] },
      { name: "score", datatype: "FP32", shape: [-1, 1] },
    ]);
  });

  it("classifies a PNG sent over HTTP as binary data, as the in-process reference does", async () => {
    const result = await classify(server, [TEXT_0]);
    expect(result.status).toBe(200);
    expect(result.outputs.map((o) => [o.name, o.datatype, o.shape])).toEqual([
      ["label", "BYTES", [1, 1]],
      ["score", "FP32", [1, 1]],
    ]);
    const [label] = bytesElements(output(result.outputs, "label").data);
    const [score] = floats(output(result.outputs, "score").data);
    expect(LABELS).toContain(label);
    expect(score).toBeGreaterThan(0);
    expect(score).toBeLessThanOrEqual(1);
    const expected = await reference([TEXT_0]);
    expect(label).toBe(expected.labels[0]);
    expectClose([score!], expected.scores, 1e-5);
    expect(label).toBe("0°"); // the upright fixture reads upright
  });

  it("equals the three steps called one by one through the server, each matching the reference", async () => {
    const expected = await reference([TEXT_180]);

    const pre = await classify(server, [TEXT_180], "text_direction_preprocess");
    expect(pre.status).toBe(200);
    const x = output(pre.outputs, "x");
    expect([x.datatype, x.shape]).toEqual(["FP32", [1, 3, 48, 192]]);
    expectClose(floats(x.data), Array.from(expected.x), 1e-6);

    const cls = await inferBinary(server.httpUrl, "text_direction_classifier", [
      { name: "x", datatype: "FP32", shape: [1, 3, 48, 192], data: x.data },
    ]);
    expect(cls.status).toBe(200);
    const probabilities = output(cls.outputs, "softmax_0.tmp_0");
    expectClose(floats(probabilities.data), expected.probabilities, 1e-5);

    const top = await inferBinary(server.httpUrl, "text_direction_topk", [
      { name: "probabilities", datatype: "FP32", shape: [1, 2], data: probabilities.data },
    ]);
    expect(top.status).toBe(200);

    const whole = await classify(server, [TEXT_180]);
    expect(whole.status).toBe(200);
    expect(bytesElements(output(whole.outputs, "label").data)).toEqual(
      bytesElements(output(top.outputs, "label").data),
    );
    expect(output(whole.outputs, "score").data.equals(output(top.outputs, "score").data)).toBe(true);
    expect(bytesElements(output(whole.outputs, "label").data)).toEqual(["180°"]); // the rotated fixture reads upside down
    expectClose(floats(output(whole.outputs, "score").data), expected.scores, 1e-5);
  });

  it("classifies a batch of 3 images (RGB, rotated, greyscale with padding) in one request", async () => {
    const files = [TEXT_0, TEXT_180, TEXT_GREY];
    const result = await classify(server, files);
    expect(result.status).toBe(200);
    expect(output(result.outputs, "label").shape).toEqual([3, 1]);
    expect(output(result.outputs, "score").shape).toEqual([3, 1]);
    const expected = await reference(files);
    expect(bytesElements(output(result.outputs, "label").data)).toEqual(expected.labels);
    expect(expected.labels).toEqual(["0°", "180°", "0°"]);
    expectClose(floats(output(result.outputs, "score").data), expected.scores, 1e-5);
    // The greyscale image is 120x32: resized to 180x48, its last 12 columns are padding (0).
    const pre = await classify(server, [TEXT_GREY], "text_direction_preprocess");
    const x = floats(output(pre.outputs, "x").data);
    expect(x.filter((_, i) => i % 192 >= 180).every((value) => value === 0)).toBe(true);
    expect(x.filter((_, i) => i % 192 === 179).some((value) => value !== 0)).toBe(true);
  });

  it("classifies over gRPC with bytes_contents and with raw_input_contents", async () => {
    const client = grpcClient(server.grpcAddress);
    try {
      const expected = await reference([TEXT_0, TEXT_180]);
      const single = await client.call("ModelInfer", {
        model_name: "text_direction",
        inputs: [{ name: "image", datatype: "BYTES", shape: [1, 1], contents: { bytes_contents: [TEXT_180] } }],
      });
      expect(
        single.outputs.map((o: { name: string; datatype: string; shape: string[] }) => [
          o.name,
          o.datatype,
          o.shape.map(Number),
        ]),
      ).toEqual([
        ["label", "BYTES", [1, 1]],
        ["score", "FP32", [1, 1]],
      ]);
      expect(bytesElements(single.raw_output_contents[0])).toEqual([expected.labels[1]]);
      expectClose(floats(single.raw_output_contents[1]), [expected.scores[1]!], 1e-5);

      const raw = await client.call("ModelInfer", {
        model_name: "text_direction",
        inputs: [{ name: "image", datatype: "BYTES", shape: [2, 1] }],
        raw_input_contents: [bytesTensor([TEXT_0, TEXT_180])],
        outputs: [{ name: "score" }, { name: "label" }],
      });
      expect(raw.outputs.map((o: { name: string }) => o.name)).toEqual(["score", "label"]);
      expectClose(floats(raw.raw_output_contents[0]), expected.scores, 1e-5);
      expect(bytesElements(raw.raw_output_contents[1])).toEqual(expected.labels);

      // A bad image is INVALID_ARGUMENT naming the step.
      await expect(
        client.call("ModelInfer", {
          model_name: "text_direction",
          inputs: [
            { name: "image", datatype: "BYTES", shape: [1, 1], contents: { bytes_contents: [Buffer.from("GIF89a")] } },
          ],
        }),
      ).rejects.toMatchObject({
        code: grpc.status.INVALID_ARGUMENT,
        details: expect.stringMatching(/text_direction_preprocess.*not a PNG/),
      });
    } finally {
      client.close();
    }
  });

  it("answers a bad image with 400 naming the step and the problem", async () => {
    const cases: Array<[string, Buffer, RegExp]> = [
      ["text", Buffer.from("this is not an image"), /not a PNG: 20 bytes that do not start with the PNG signature/],
      ["JPEG", Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 16, 0x4a, 0x46, 0x49, 0x46]), /not a PNG.*looks like a JPEG/],
      [
        "truncated",
        TEXT_0.subarray(0, 100),
        /truncated PNG: chunk IDAT at byte 33 declares \d+ bytes of data but the file ends after 100 bytes/,
      ],
      [
        "cut at a chunk boundary",
        TEXT_0.subarray(0, 33),
        /truncated PNG: the file ends after 33 bytes, before its IEND chunk/,
      ],
      ["corrupt", Buffer.from(TEXT_0).fill(0, 50, 60), /corrupt PNG: chunk IDAT at byte 33 fails its CRC check/],
      ["empty", Buffer.alloc(0), /empty \(0 bytes\)/],
    ];
    for (const [what, file, problem] of cases) {
      const result = await classify(server, [file]);
      expect(result.status, what).toBe(400);
      expect(result.error, what).toMatch(
        /operator 'text_direction' step 'text_direction_preprocess' \(model 'text_direction_preprocess'\) failed: input 'image': /,
      );
      expect(result.error, what).toMatch(problem);
    }
    // In a batch, the message names the element.
    const batch = await classify(server, [TEXT_0, Buffer.from("nope")]);
    expect(batch.status).toBe(400);
    expect(batch.error).toMatch(/input 'image' element 1 of 2: not a PNG/);
  });

  it("fails only the bad requests among concurrent ones", async () => {
    // The preprocessing model has no dynamic_batching: the gateway's batcher would join these requests into
    // one, and one bad image would fail them all. Several requests in one execute() are checked in process below.
    const files = [TEXT_0, Buffer.from("bad 1"), TEXT_180, TEXT_0.subarray(0, 60), TEXT_GREY, TEXT_180];
    const results = await Promise.all(files.map((file) => classify(server, [file], "text_direction_preprocess")));
    expect(results.map((result) => result.status)).toEqual([200, 400, 200, 400, 200, 200]);
    const expected = await reference([TEXT_0, TEXT_180, TEXT_GREY, TEXT_180]);
    const good = [0, 2, 4, 5].map((i) => floats(output(results[i]!.outputs, "x").data));
    expectClose(good.flat(), Array.from(expected.x), 1e-6);
  });

  it("counts an execution in the statistics of the ensemble and of each composing model", async () => {
    const models = ["text_direction", "text_direction_preprocess", "text_direction_classifier", "text_direction_topk"];
    const before = await Promise.all(models.map((model) => modelStats(server.httpUrl, model)));
    expect((await classify(server, [TEXT_0, TEXT_GREY])).status).toBe(200);
    const after = await Promise.all(models.map((model) => modelStats(server.httpUrl, model)));
    models.forEach((model, i) => {
      expect(after[i]!.inference_stats["success"]!.count - before[i]!.inference_stats["success"]!.count, model).toBe(1);
      expect(after[i]!.inference_count - before[i]!.inference_count, model).toBe(2);
    });
    // The composing models ran (the ensemble itself has no execution of its own).
    for (const i of [1, 2, 3]) expect(after[i]!.execution_count - before[i]!.execution_count, models[i]).toBe(1);
  });

  it("keeps the k best classes: k from the config, best first, ties to the lower class", async () => {
    const probabilities = [0.3, 0.7, 0.9, 0.1, 0.5, 0.5];
    const top1 = await inferBinary(server.httpUrl, "text_direction_topk", [
      { name: "probabilities", datatype: "FP32", shape: [3, 2], data: float32Buffer(probabilities) },
    ]);
    expect(top1.status).toBe(200);
    expect(output(top1.outputs, "label").shape).toEqual([3, 1]);
    expect(bytesElements(output(top1.outputs, "label").data)).toEqual(["180°", "0°", "0°"]);
    expect(floats(output(top1.outputs, "score").data)).toEqual([0.7, 0.9, 0.5].map((v) => Math.fround(v)));

    const top2 = await inferBinary(server.httpUrl, "text_direction_top2", [
      { name: "probabilities", datatype: "FP32", shape: [3, 2], data: float32Buffer(probabilities) },
    ]);
    expect(top2.status).toBe(200);
    expect(output(top2.outputs, "label").shape).toEqual([3, 2]);
    expect(output(top2.outputs, "score").shape).toEqual([3, 2]);
    expect(bytesElements(output(top2.outputs, "label").data)).toEqual(["180°", "0°", "0°", "180°", "0°", "180°"]);
    expect(floats(output(top2.outputs, "score").data)).toEqual(
      [0.7, 0.3, 0.9, 0.1, 0.5, 0.5].map((v) => Math.fround(v)),
    );

    // k larger than the number of labels: the model does not load, and says why.
    const index = (await (await fetch(`${server.httpUrl}/v2/repository/index`, { method: "POST" })).json()) as Array<{
      name: string;
      state: string;
      reason: string;
    }>;
    const refused = index.find((row) => row.name === "text_direction_top3");
    expect(refused?.state).toBe("UNAVAILABLE");
    expect(refused?.reason).toMatch(/parameter 'k' must be an integer from 1 to 2 \(the number of labels\), got '3'/);
  });
});

describe("the example's TypeScript models, in process", () => {
  const ctx = {
    modelName: "test",
    tensor,
    log: () => undefined,
    infer: async () => ({ error: { kind: "UNAVAILABLE", message: "no BLS here" } }),
    error: (kind, message) => new ModelError(kind, message),
  } satisfies ExecuteContext;
  const request = (name: string, value: ReturnType<typeof tensor.bytes>): TypedRequest => ({
    id: "",
    inputs: new Map([[name, value]]),
    parameters: {},
    requestedOutputs: [],
    sender: { finished: false, send: () => undefined },
    input: (wanted: string) => {
      if (wanted !== name) throw new ModelError("INVALID_ARG", `no input '${wanted}'`);
      return value;
    },
  });
  const initArgs = (modelDir: string, parameters: Record<string, string>, outputDims = [-1]): InitializeArgs => ({
    config: {
      input: [{ name: "probabilities", data_type: "TYPE_FP32", dims: [2] }],
      output: [
        { name: "label", data_type: "TYPE_STRING", dims: outputDims },
        { name: "score", data_type: "TYPE_FP32", dims: outputDims },
      ],
    },
    parameters,
    modelName: "text_direction_topk",
    instanceName: "text_direction_topk_0",
    instanceKind: "KIND_CPU",
    modelDir,
    modelVersion: "1",
    log: () => undefined,
    tensor,
  });

  const preprocessArgs = (parameters: Record<string, string>): InitializeArgs => ({
    ...initArgs(join(EXAMPLE_REPOSITORY, "text_direction_preprocess"), parameters),
    config: {},
    modelName: "text_direction_preprocess",
    instanceName: "text_direction_preprocess_0",
  });

  it("preprocessing: a bad image fails only its own request of the execute() batch", async () => {
    const { default: Preprocess } = (await import(
      "../examples/model_repository/text_direction_preprocess/1/model.ts"
    )) as {
      default: new () => {
        initialize(args: InitializeArgs): void;
        execute(requests: TypedRequest[], ctx: ExecuteContext): Array<TypedResponse | Error>;
      };
    };
    const model = new Preprocess();
    model.initialize(preprocessArgs({}));
    const answers = model.execute(
      [
        request("image", tensor.bytes("image", [1, 1], [TEXT_0])),
        request("image", tensor.bytes("image", [2, 1], [TEXT_GREY, Buffer.from([0x89, 0x50, 0x4e, 0x47])])),
        request("image", tensor.bytes("image", [2, 1], [TEXT_180, TEXT_GREY])),
        request("image", tensor.bytes("image", [1, 1], [png("text_0.png")])),
      ],
      ctx,
    );
    expect(answers).toHaveLength(4);
    const failure = answers[1] as ModelError;
    expect(failure).toBeInstanceOf(ModelError);
    expect(failure.kind).toBe("INVALID_ARG");
    expect(failure.message).toBe(
      "input 'image' element 1 of 2: not a PNG: 4 bytes that do not start with the PNG signature (they start with 89 50 4e 47)",
    );
    const x = (answer: TypedResponse | Error): number[] =>
      Array.from(tensor.from((answer as TypedResponse).outputs[0]!).toFloat32Array());
    expect((answers[0] as TypedResponse).outputs[0]!.shape).toEqual([1, 3, 48, 192]);
    expect(x(answers[0]!)).toEqual(Array.from(referencePreprocess(TEXT_0)));
    expect((answers[2] as TypedResponse).outputs[0]!.shape).toEqual([2, 3, 48, 192]);
    expect(x(answers[2]!)).toEqual([...referencePreprocess(TEXT_180), ...referencePreprocess(TEXT_GREY)]);
    // max_pixels: 160x40 = 6400 pixels is over the 5000 given here.
    const small = new Preprocess();
    small.initialize(preprocessArgs({ max_pixels: "5000" }));
    const big = small.execute([request("image", tensor.bytes("image", [1, 1], [TEXT_0]))], ctx)[0] as ModelError;
    expect(big.message).toBe("input 'image': image too large: 160x40 pixels, at most 5000 are accepted");
    expect(() => new Preprocess().initialize(preprocessArgs({ max_pixels: "-1" }))).toThrow(
      /'max_pixels' must be a positive integer/,
    );
  });

  it("top-k: k and the labels are checked against the config at initialize", async () => {
    const { default: TopK } = (await import("../examples/model_repository/text_direction_topk/1/model.ts")) as {
      default: new () => {
        initialize(args: InitializeArgs): void;
        execute(requests: TypedRequest[], ctx: ExecuteContext): Array<TypedResponse | Error>;
      };
    };
    const load = (args: InitializeArgs) => () => new TopK().initialize(args);
    expect(load(initArgs(TOPK_DIR, {}, [1]))).not.toThrow(); // k defaults to 1
    expect(load(initArgs(TOPK_DIR, { k: "2" }, [2]))).not.toThrow();
    expect(load(initArgs(TOPK_DIR, { k: "0" }))).toThrow(
      /parameter 'k' must be an integer from 1 to 2 \(the number of labels\), got '0'/,
    );
    expect(load(initArgs(TOPK_DIR, { k: "1.5" }))).toThrow(/parameter 'k' must be an integer/);
    expect(load(initArgs(TOPK_DIR, { k: "2" }, [1]))).toThrow(
      /output 'label' has dims \[1\] but k is 2: give it dims \[ 2 \] or \[ -1 \]/,
    );
    expect(load(initArgs(IMAGES, {}))).toThrow(/cannot read the labels file '.*examples\/images\/labels.txt'/);
    const three = initArgs(TOPK_DIR, {});
    (three.config as { input: Array<{ dims: number[] }> }).input[0]!.dims = [3];
    expect(load(three)).toThrow(/input 'probabilities' has 3 classes but '.*labels.txt' has 2 labels/);

    const model = new TopK();
    model.initialize(initArgs(TOPK_DIR, { k: "2" }));
    const [ranked, wrong] = model.execute(
      [
        request("probabilities", tensor.float32("probabilities", [2, 2], [Number.NaN, 0.25, 0.6, 0.4])),
        request("probabilities", tensor.float32("probabilities", [1, 3], [0.2, 0.3, 0.5])),
      ],
      ctx,
    );
    const outputs = (ranked as TypedResponse).outputs.map((output) => tensor.from(output));
    expect(outputs.map((output) => [output.name, output.shape])).toEqual([
      ["label", [2, 2]],
      ["score", [2, 2]],
    ]);
    expect(outputs[0]!.toStrings()).toEqual(["180°", "0°", "0°", "180°"]);
    expect(outputs[1]!.toNumbers()).toEqual([0.25, Number.NaN, 0.6, 0.4].map((v) => Math.fround(v)));
    expect((wrong as ModelError).kind).toBe("INVALID_ARG");
    expect((wrong as ModelError).message).toMatch(
      /input 'probabilities' has 3 classes per row \(shape \[1,3\]\); the labels are 2/,
    );
  });
});
