import { mkdtempSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { parseStepParams, STEP_CATALOG } from "./step-catalog.js";
import { StepPipeline } from "./step-pipeline.js";
import { createStep, implementedSteps, type StepEnvironment } from "./step-runtime.js";
import { StepInputError, type StepTensor } from "./step-tensor.js";
import { bestIndices } from "./tensor-steps.js";

/** Files for steps that read them (labels, tokenizer.json), from a temporary folder. */
function folder(files: Record<string, string>): StepEnvironment {
  const dir = mkdtempSync(path.join(tmpdir(), "operon-steps-"));
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text);
  return { readFile: (relative) => readFile(path.join(dir, relative)) };
}
const NO_FILES = folder({});

const f32 = (shape: number[], values: number[]): StepTensor => ({
  datatype: "FP32",
  shape,
  data: Float32Array.from(values),
});
const u8 = (shape: number[], values: number[]): StepTensor => ({
  datatype: "UINT8",
  shape,
  data: Uint8Array.from(values),
});
const bytes = (...elements: Buffer[]): StepTensor => ({ datatype: "BYTES", shape: [elements.length], data: elements });

async function run(name: string, params: unknown, inputs: Record<string, StepTensor>, env = NO_FILES) {
  return (await createStep(name, params, env))(inputs);
}

describe("step catalog", () => {
  it("pairs every catalog entry with an implementation and documents each", () => {
    expect(implementedSteps().sort()).toEqual(STEP_CATALOG.map((step) => step.name).sort());
    for (const step of STEP_CATALOG) {
      expect(step.doc.length).toBeGreaterThan(40);
      const defaults = step.params.safeParse(step.example ?? {});
      expect(defaults.success, step.name).toBe(true);
      expect(step.inputs(defaults.data).length).toBeGreaterThan(0);
      expect(step.outputs(defaults.data).length).toBeGreaterThan(0);
    }
  });

  it("names the field in every parameter error", () => {
    const problems = (name: string, params: unknown): string[] => {
      const result = parseStepParams(name, params);
      return result.ok ? [] : result.problems;
    };
    expect(problems("image.resize", { height: 0, width: 192 })).toEqual(["params.height must be an integer >= 1"]);
    expect(problems("image.resize", { height: 48, width: 192, fit: "stretch" })).toEqual([
      'params.fit must be "exact", "contain", "cover" or "height"',
    ]);
    expect(problems("image.resize", { width: 4 })).toEqual(["params.height must be an integer >= 1"]);
    // A parameter cannot make a step allocate without bound.
    expect(problems("image.pad", { height: 100_000, width: 4 })).toEqual(["params.height must be at most 16384"]);
    expect(problems("image.decode", { chanels: 3 })).toEqual(["params: unknown parameter 'chanels'"]);
    expect(problems("image.normalize", { mean: [0.1, 0.2, 0.3], std: [1, 2] })).toEqual([
      "params.std: mean and std must have the same length (or one of them a single value)",
    ]);
    expect(problems("tensor.topk", { k: 1, labels: "../../etc/passwd" })[0]).toMatch(
      /^params\.labels must be a relative path inside/,
    );
    expect(problems("tensor.cast", { to: "FP17" })[0]).toMatch(/^params\.to must be one of BOOL, UINT8/);
    expect(problems("tensor.reshape", { shape: [-1, -1] })).toEqual(["params.shape may hold at most one -1"]);
    expect(problems("image.blur", {})[0]).toMatch(/^step 'image.blur' is not a built-in step \(known: image.decode, /);
  });
});

describe("image steps", () => {
  it("decodes PNG, JPEG and WebP into HWC pixels, and refuses other bytes naming the problem", async () => {
    const raw = { raw: { width: 4, height: 2, channels: 3 as const } };
    const pixels = Buffer.alloc(4 * 2 * 3, 200);
    for (const format of ["png", "jpeg", "webp"] as const) {
      const file = await sharp(pixels, raw)
        .toFormat(format, format === "png" ? {} : { quality: 100 })
        .toBuffer();
      const { y } = await run("image.decode", {}, { image: bytes(file) });
      expect([y!.datatype, y!.shape], format).toEqual(["UINT8", [2, 4, 3]]);
      expect(Math.max(...Array.from(y!.data as Uint8Array, (v) => Math.abs(v - 200))), format).toBeLessThanOrEqual(3);
      const grey = await run("image.decode", { channels: 1 }, { image: bytes(file) });
      expect(grey.y!.shape).toEqual([2, 4, 1]);
    }
    await expect(run("image.decode", {}, { image: bytes(Buffer.from("GIF89a....")) })).rejects.toThrow(
      /input 'image' is not a readable image \(10 bytes starting 47 49 46 38/,
    );
    await expect(run("image.decode", {}, { image: bytes(Buffer.alloc(0)) })).rejects.toThrow(/is empty \(0 bytes\)/);
    // A real GIF (libvips reads it): refused by its format, not decoded.
    const gif = await sharp(pixels, raw).gif().toBuffer();
    await expect(run("image.decode", {}, { image: bytes(gif) })).rejects.toThrow(
      "input 'image' is gif; image.decode reads PNG, JPEG and WebP",
    );
    // A PNG cut short: its header reads, its pixels do not.
    const png = await sharp(Buffer.alloc(32 * 32 * 3, 9), { raw: { width: 32, height: 32, channels: 3 } })
      .png({ compressionLevel: 0 })
      .toBuffer();
    await expect(run("image.decode", {}, { image: bytes(png.subarray(0, png.length - 200)) })).rejects.toThrow(
      /^input 'image': corrupt png \(32x32\): /,
    );
    const big = await sharp(Buffer.alloc(64 * 64 * 3), { raw: { width: 64, height: 64, channels: 3 } })
      .png()
      .toBuffer();
    await expect(run("image.decode", { maxPixels: 1000 }, { image: bytes(big) })).rejects.toThrow(
      /too large: 64x64 pixels, at most 1000 are accepted \(parameter maxPixels\)/,
    );
  });

  it("resizes exact, contain, cover and fit-height, bilinear as cv2 (half-pixel centres)", async () => {
    // 1x4 row 0, 100, 200, 255 -> 2 columns: cv2 samples at 0.5 and 2.5 -> 50, 227.5 -> 50, 228.
    const row = u8([1, 4, 1], [0, 100, 200, 255]);
    const exact = await run("image.resize", { height: 1, width: 2 }, { x: row });
    expect(Array.from(exact.y!.data as Uint8Array)).toEqual([50, 228]);
    const image = u8([40, 160, 1], new Array(40 * 160).fill(7));
    const shapeOf = async (params: object) => (await run("image.resize", params, { x: image })).y!.shape;
    expect(await shapeOf({ height: 48, width: 192, fit: "height" })).toEqual([48, 192, 1]);
    expect(await shapeOf({ height: 48, width: 100, fit: "height" })).toEqual([48, 100, 1]);
    expect(await shapeOf({ height: 100, width: 100, fit: "contain" })).toEqual([25, 100, 1]);
    expect(await shapeOf({ height: 100, width: 100, fit: "cover" })).toEqual([100, 100, 1]);
    expect(await shapeOf({ height: 20, width: 30, interpolation: "lanczos3" })).toEqual([20, 30, 1]);
    await expect(
      run("image.resize", { height: 2, width: 2, interpolation: "cubic" }, { x: f32([1, 1, 1], [1]) }),
    ).rejects.toThrow(/needs UINT8 pixels, got FP32/);
  });

  it("normalizes, swaps R and B, transposes HWC -> CHW, pads and crops", async () => {
    const pixel = u8([1, 2, 3], [0, 51, 255, 255, 0, 102]);
    const normalized = await run("image.normalize", { scale: 1 / 255, mean: [0.5], std: [0.5] }, { x: pixel });
    expect(Array.from(normalized.y!.data as Float32Array)).toEqual(
      [0, 51, 255, 255, 0, 102].map((v) => Math.fround((v / 255 - 0.5) / 0.5)),
    );
    // 8-bit pixels take a table per channel, others the expression: the same FP32 values, in both layouts.
    for (const layout of ["HWC", "CHW"] as const) {
      const values = Array.from({ length: 4 * 5 * 3 }, (_, i) => (i * 37) % 256);
      const params = { scale: 1 / 255, mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225], layout };
      const shape = layout === "HWC" ? [4, 5, 3] : [3, 4, 5];
      const fromU8 = await run("image.normalize", params, { x: u8(shape, values) });
      const fromF32 = await run("image.normalize", params, { x: f32(shape, values) });
      const channel = (i: number) => (layout === "HWC" ? i % 3 : Math.floor(i / 20));
      const expected = values.map((v, i) =>
        Math.fround((v / 255 - params.mean[channel(i)]!) / params.std[channel(i)]!),
      );
      expect(Array.from(fromU8.y!.data as Float32Array), layout).toEqual(expected);
      expect(Array.from(fromF32.y!.data as Float32Array), layout).toEqual(expected);
    }
    const bgr = await run("image.swap-rb", {}, { x: pixel });
    expect(Array.from(bgr.y!.data as Uint8Array)).toEqual([255, 51, 0, 102, 0, 255]);
    const chw = await run("image.layout", { from: "HWC", to: "CHW" }, { x: pixel });
    expect([chw.y!.shape, Array.from(chw.y!.data as Uint8Array)]).toEqual([
      [3, 1, 2],
      [0, 255, 51, 0, 255, 102],
    ]);
    const back = await run("image.layout", { from: "CHW", to: "HWC" }, { x: chw.y! });
    expect(Array.from(back.y!.data as Uint8Array)).toEqual([0, 51, 255, 255, 0, 102]);
    const padded = await run("image.pad", { height: 1, width: 4, layout: "CHW", value: 9 }, { x: chw.y! });
    expect([padded.y!.shape, Array.from(padded.y!.data as Uint8Array)]).toEqual([
      [3, 1, 4],
      [0, 255, 9, 9, 51, 0, 9, 9, 255, 102, 9, 9],
    ]);
    await expect(run("image.pad", { height: 1, width: 1 }, { x: pixel })).rejects.toThrow(
      /larger than the pad target 1x1/,
    );
    const cropped = await run("image.crop", { height: 1, width: 1, left: 1 }, { x: pixel });
    expect(Array.from(cropped.y!.data as Uint8Array)).toEqual([255, 0, 102]);
    await expect(run("image.crop", { height: 2, width: 1 }, { x: pixel })).rejects.toThrow(
      /does not fit in the 1x2 input 'x'/,
    );
  });
});

describe("tensor steps", () => {
  it("picks the same top k as a full sort, ties, NaN and infinities included (random rows)", () => {
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32;
    const special = [Number.NaN, Infinity, -Infinity, 0.5];
    for (let trial = 0; trial < 300; trial += 1) {
      const n = 1 + Math.floor(next() * 40);
      // Few distinct values, so that ties are common; now and then a special one.
      const values = Float64Array.from({ length: n }, () =>
        next() < 0.1 ? special[Math.floor(next() * 4)]! : Math.floor(next() * 6) / 4,
      );
      const score = (i: number) => (Number.isNaN(values[i]!) ? -Infinity : values[i]!);
      const sorted = Array.from({ length: n }, (_, i) => i).sort((a, b) => score(b) - score(a) || a - b);
      for (const k of [1, 2, 5, n]) {
        if (k > n) continue;
        expect(bestIndices(values, 0, n, k), `${Array.from(values)} k=${k}`).toEqual(sorted.slice(0, k));
      }
    }
    // A row of a larger tensor (offset), and k above the insertion limit (the sort).
    const big = Float64Array.from({ length: 300 }, (_, i) => (i * 7919) % 100);
    const expected = Array.from({ length: 100 }, (_, i) => i).sort((a, b) => big[200 + b]! - big[200 + a]! || a - b);
    expect(bestIndices(big, 200, 100, 3)).toEqual(expected.slice(0, 3));
    expect(bestIndices(big, 200, 100, 80)).toEqual(expected.slice(0, 80));
  });

  it("softmax, argmax, threshold, cast, reshape, concat and split", async () => {
    const x = f32([2, 2], [1, 2, 3, 3]);
    const soft = Array.from((await run("tensor.softmax", {}, { x })).y!.data as Float32Array);
    expect(soft[0]! + soft[1]!).toBeCloseTo(1, 6);
    expect(soft[1]).toBeCloseTo(Math.exp(1) / (1 + Math.exp(1)), 6);
    expect(soft.slice(2)).toEqual([0.5, 0.5]);
    const arg = await run("tensor.argmax", {}, { x });
    expect([arg.index!.shape, Array.from(arg.index!.data as BigInt64Array)]).toEqual([[2], [1n, 0n]]);
    const bools = await run("tensor.threshold", { value: 2 }, { x });
    expect([bools.y!.datatype, Array.from(bools.y!.data as Uint8Array)]).toEqual(["BOOL", [0, 0, 1, 1]]);
    const ints = await run("tensor.cast", { to: "INT32" }, { x: f32([2], [1.9, -1.9]) });
    expect(Array.from(ints.y!.data as Int32Array)).toEqual([1, -1]);
    expect((await run("tensor.reshape", { shape: [-1] }, { x })).y!.shape).toEqual([4]);
    await expect(run("tensor.reshape", { shape: [3, -1] }, { x })).rejects.toThrow(/cannot be reshaped to \[3, -1\]/);
    const joined = await run("tensor.concat", { axis: 1 }, { x0: x, x1: f32([2, 1], [7, 8]) });
    expect([joined.y!.shape, Array.from(joined.y!.data as Float32Array)]).toEqual([
      [2, 3],
      [1, 2, 7, 3, 3, 8],
    ]);
    const parts = await run("tensor.split", { axis: 1, sizes: [2, 1] }, { x: joined.y! });
    expect(Array.from(parts.y1!.data as Float32Array)).toEqual([7, 8]);
    await expect(run("tensor.split", { sizes: [1, 5] }, { x })).rejects.toThrow(
      /sizes add up to 6 but input 'x' has 2/,
    );
  });

  it("top-k with labels: best first, ties by lower index, NaN last; the label count must match", async () => {
    const env = folder({ "labels.txt": "cat\n\ndog\nbird\n" });
    const result = await run("tensor.topk", { k: 2, labels: "labels.txt" }, { x: f32([3], [0.2, 0.4, 0.4]) }, env);
    expect(result.label!.data.map(String)).toEqual(["dog", "bird"]);
    expect(Array.from(result.score!.data as Float32Array)).toEqual([Math.fround(0.4), Math.fround(0.4)]);
    const nan = await run("tensor.topk", { k: 3, labels: "labels.txt" }, { x: f32([3], [Number.NaN, 0.1, 0.2]) }, env);
    expect(Array.from(nan.index!.data as BigInt64Array)).toEqual([2n, 1n, 0n]);
    await expect(run("tensor.topk", { labels: "labels.txt" }, { x: f32([2], [1, 2]) }, env)).rejects.toThrow(
      /has 2 classes .* but the labels file 'labels.txt' has 3 labels/,
    );
    await expect(createStep("tensor.topk", { k: 4, labels: "labels.txt" }, env)).rejects.toThrow(
      /params.k must be at most 3/,
    );
    await expect(createStep("tensor.topk", { labels: "missing.txt" }, env)).rejects.toThrow(
      /cannot read the labels file 'missing.txt'/,
    );
  });
});

describe("text.tokenize", () => {
  // A small BERT-style WordPiece tokenizer.json, the format Hugging Face's tokenizers write.
  const special = (id: number, content: string) => ({
    id,
    content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: true,
  });
  const tokenizerJson = JSON.stringify({
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: [special(0, "[PAD]"), special(1, "[UNK]"), special(2, "[CLS]"), special(3, "[SEP]")],
    normalizer: {
      type: "BertNormalizer",
      clean_text: true,
      handle_chinese_chars: true,
      strip_accents: null,
      lowercase: true,
    },
    pre_tokenizer: { type: "BertPreTokenizer" },
    post_processor: {
      type: "TemplateProcessing",
      single: [
        { SpecialToken: { id: "[CLS]", type_id: 0 } },
        { Sequence: { id: "A", type_id: 0 } },
        { SpecialToken: { id: "[SEP]", type_id: 0 } },
      ],
      pair: [{ Sequence: { id: "A", type_id: 0 } }, { Sequence: { id: "B", type_id: 1 } }],
      special_tokens: {
        "[CLS]": { id: "[CLS]", ids: [2], tokens: ["[CLS]"] },
        "[SEP]": { id: "[SEP]", ids: [3], tokens: ["[SEP]"] },
      },
    },
    decoder: { type: "WordPiece", prefix: "##", cleanup: true },
    model: {
      type: "WordPiece",
      unk_token: "[UNK]",
      continuing_subword_prefix: "##",
      max_input_chars_per_word: 100,
      vocab: { "[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, hello: 4, world: 5, "##s": 6 },
    },
  });
  const env = folder({ "tokenizer.json": tokenizerJson });
  const text = (s: string) => bytes(Buffer.from(s));

  it("gives ids and attention mask padded to maxLength, truncating when asked", async () => {
    const out = await run("text.tokenize", { maxLength: 8 }, { text: text("Hello worlds zebra") }, env);
    expect(Array.from(out.input_ids!.data as BigInt64Array)).toEqual([2n, 4n, 5n, 6n, 1n, 3n, 0n, 0n]);
    expect(Array.from(out.attention_mask!.data as BigInt64Array)).toEqual([1n, 1n, 1n, 1n, 1n, 1n, 0n, 0n]);
    const cut = await run("text.tokenize", { maxLength: 3 }, { text: text("hello world hello") }, env);
    expect(Array.from(cut.input_ids!.data as BigInt64Array)).toEqual([2n, 4n, 5n]);
    const bare = await run("text.tokenize", { padding: "none", addSpecialTokens: false }, { text: text("hello") }, env);
    expect(bare.input_ids!.shape).toEqual([1]);
    await expect(
      run("text.tokenize", { maxLength: 2, truncation: false }, { text: text("hello world") }, env),
    ).rejects.toThrow(/has 4 tokens, more than maxLength 2 \(truncation is off\)/);
    await expect(createStep("text.tokenize", {}, NO_FILES)).rejects.toThrow(
      /cannot read the tokenizer file 'tokenizer.json'/,
    );
  });
});

describe("step pipeline", () => {
  const signature = { inputs: [{ name: "image", datatype: "BYTES" as const }], outputs: [{ name: "x" }] };

  it("lists every problem of a steps.json at load, each naming its step and field", async () => {
    const error = await StepPipeline.create(
      {
        steps: [
          { id: "decode", step: "image.decode", params: { channels: 2 } },
          { id: "resize", step: "image.resize", params: { height: 48 } },
          {
            id: "pad",
            step: "image.pad",
            params: { height: 1, width: 1 },
            inputs: { x: "nowhere" },
            outputs: { z: "x" },
          },
        ],
      },
      signature,
      NO_FILES,
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StepInputError);
    const message = (error as Error).message;
    expect(message).toContain("step 1 'decode' (image.decode): params.channels must be 1, 3 or 4");
    expect(message).toContain("step 2 'resize' (image.resize): params.width must be an integer >= 1");
    expect(message).toContain("step 3 'pad' (image.pad): outputs.z: no such output (outputs: y)");
    expect(message).toContain(
      "input 'x' reads 'nowhere', which neither the model's inputs nor an earlier step provide",
    );
    expect(message).toContain("model output 'x' is produced by no step");
    await expect(StepPipeline.create({ steps: [] }, signature, NO_FILES)).rejects.toThrow(
      /steps must name at least one step/,
    );
  });

  it("chains steps by default (first port reads the previous step's first output) and names the failing step", async () => {
    const pipeline = await StepPipeline.create(
      {
        steps: [
          { id: "decode", step: "image.decode" },
          { id: "small", step: "image.resize", params: { height: 2, width: 2 }, outputs: { y: "x" } },
        ],
      },
      signature,
      NO_FILES,
    );
    const png = await sharp(Buffer.alloc(4 * 4 * 3, 10), { raw: { width: 4, height: 4, channels: 3 } })
      .png()
      .toBuffer();
    const out = await pipeline.run(new Map([["image", bytes(png)]]));
    expect(out.get("x")!.shape).toEqual([2, 2, 3]);
    await expect(pipeline.run(new Map([["image", bytes(Buffer.from("no"))]]))).rejects.toThrow(
      /^step 'decode' \(image.decode\): input 'image' is not a readable image/,
    );
  });
});

describe("pipeline plan (pure: what the control plane checks before storing)", () => {
  it("checks datatypes at each edge and against the declared model tensors", async () => {
    const { planPipeline } = await import("./pipeline-plan.js");
    const plan = planPipeline(
      { steps: [{ id: "top", step: "tensor.topk", params: { labels: "labels.txt" } }] },
      { inputs: [{ name: "text", datatype: "BYTES" }], outputs: [{ name: "label", datatype: "FP32" }] },
    );
    expect(plan.ok).toBe(false);
    expect(plan.ok ? [] : plan.problems).toEqual([
      "step 1 'top' (tensor.topk): input 'x' takes BOOL or UINT8 or UINT16 or UINT32 or UINT64 or INT8 or INT16 or INT32 or INT64 or FP32 or FP64, but 'text' is BYTES",
      "model output 'label' is declared FP32, but its step produces BYTES",
    ]);
    const good = planPipeline(
      { steps: [{ id: "top", step: "tensor.topk", params: { labels: "labels.txt" } }] },
      { inputs: [{ name: "probabilities", datatype: "FP32" }], outputs: [{ name: "label", datatype: "BYTES" }] },
    );
    expect(good.ok && good.steps.map((step) => [step.id, step.inputs, step.files])).toEqual([
      ["top", [["x", "probabilities"]], ["labels.txt"]],
    ]);
  });
});
