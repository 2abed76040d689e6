import { z } from "zod";
import type { DataType } from "@operon/protocol/datatypes";
import { NUMERIC_DATATYPES } from "./step-tensor.js";

/**
 * The built-in steps, described once: name, category, the doc string the
 * operator editor shows, the parameters (a zod schema; every message names
 * its field), and the typed ports each parameter set gives. Pure and
 * browser-safe: the console draws its palette from it, and the worker's
 * runtime (step-runtime.ts) pairs each entry with its implementation.
 *
 * Ports are one sample's tensors: no batch dimension (the pipeline splits
 * batches). `dims` entries are numbers where the parameters fix them and
 * letters where they come from the data (H, W, C, N, ...); -1 is any size.
 */
export type StepCategory = "image" | "text" | "tensor";

export interface StepPort {
  name: string;
  /** The datatypes accepted (inputs) or produced (outputs). */
  datatypes: readonly DataType[];
  dims: Array<number | string>;
  doc: string;
}

export interface StepDefinition<P = unknown> {
  name: string;
  category: StepCategory;
  /** One line for the palette. */
  title: string;
  /** What it does and what it expects, for the editor's side panel. */
  doc: string;
  params: z.ZodType<P>;
  inputs(params: P): StepPort[];
  outputs(params: P): StepPort[];
  /** Parameters naming files of the model's folder (labels, tokenizer.json): uploads must carry them. */
  files?(params: P): string[];
  /** Parameters that parse, for steps with required ones (the palette shows the ports they give). */
  example?: Record<string, unknown>;
}

const NUMERIC: readonly DataType[] = NUMERIC_DATATYPES;
const PIXEL_TYPES: readonly DataType[] = ["UINT8", "FP32"];

const positiveInt = (field: string) =>
  z.int({ error: `${field} must be an integer >= 1` }).min(1, { error: `${field} must be an integer >= 1` });
/** Image sides: a bound, so that a parameter cannot make a step allocate without limit (16384^2 x 4 x FP32 = 4 GiB at most). */
export const MAX_SIDE = 16384;
const side = (field: string) => positiveInt(field).max(MAX_SIDE, { error: `${field} must be at most ${MAX_SIDE}` });
const nonNegativeInt = (field: string) =>
  z.int({ error: `${field} must be an integer >= 0` }).min(0, { error: `${field} must be an integer >= 0` });
const finite = (field: string) => z.number({ error: `${field} must be a finite number` });
const axis = () => z.int({ error: "axis must be an integer (negative counts from the end)" }).default(-1);
const layout = () =>
  z.enum(["HWC", "CHW"], { error: 'layout must be "HWC" or "CHW"' }).default("HWC").describe("The pixels' layout");
const fileName = (field: string) =>
  z
    .string({ error: `${field} must be a file name in the model's folder` })
    .regex(/^(?!\/)(?!.*(^|\/)\.\.(\/|$))[^\\\0]+$/, {
      error: `${field} must be a relative path inside the model's folder (no '..', no leading '/')`,
    });

const pixelDims = (l: "HWC" | "CHW", h: number | string, w: number | string, c: number | string = "C") =>
  l === "HWC" ? [h, w, c] : [c, h, w];

function define<S extends z.ZodType>(
  definition: Omit<StepDefinition<z.output<S>>, "params"> & { params: S },
): StepDefinition<z.output<S>> {
  return definition as StepDefinition<z.output<S>>;
}

const decode = define({
  name: "image.decode",
  category: "image",
  title: "Decode an image file (PNG, JPEG, WebP)",
  doc:
    "Decodes one PNG, JPEG or WebP file (BYTES, one element) into 8-bit pixels, height x width x channels, with " +
    "libvips (sharp). channels 3 gives RGB (alpha dropped, grey expanded), 4 RGBA, 1 grey. A file whose header " +
    "declares more than maxPixels pixels is refused before it is decoded; a file of another format, or a corrupt " +
    "one, fails its request with INVALID_ARG naming the problem.",
  params: z.strictObject({
    channels: z.union([z.literal(1), z.literal(3), z.literal(4)], { error: "channels must be 1, 3 or 4" }).default(3),
    maxPixels: positiveInt("maxPixels").default(4096 * 4096),
  }),
  inputs: () => [{ name: "image", datatypes: ["BYTES"], dims: [1], doc: "The image file's bytes" }],
  outputs: (p) => [{ name: "y", datatypes: ["UINT8"], dims: ["H", "W", p.channels], doc: "Pixels, HWC" }],
});

const resize = define({
  name: "image.resize",
  category: "image",
  title: "Resize (exact, keep aspect, cover + crop, fit height)",
  doc:
    "Resizes HWC pixels. fit: exact = height x width; contain = the largest size of the same aspect that fits in " +
    "height x width (pad it with image.pad); cover = the smallest size of the same aspect that covers it, centre-" +
    "cropped to height x width; height = height rows and min(width, ceil(height * w / h)) columns (PP-OCR's text-" +
    "line resize). interpolation bilinear is cv2.INTER_LINEAR (half-pixel centres, edge clamping, rounded to 8 bits " +
    "for UINT8); nearest, cubic and lanczos3 use libvips (UINT8 only).",
  example: { height: 224, width: 224 },
  params: z.strictObject({
    height: side("height"),
    width: side("width"),
    fit: z
      .enum(["exact", "contain", "cover", "height"], { error: 'fit must be "exact", "contain", "cover" or "height"' })
      .default("exact"),
    interpolation: z
      .enum(["bilinear", "nearest", "cubic", "lanczos3"], {
        error: 'interpolation must be "bilinear", "nearest", "cubic" or "lanczos3"',
      })
      .default("bilinear"),
  }),
  inputs: () => [{ name: "x", datatypes: PIXEL_TYPES, dims: ["H", "W", "C"], doc: "Pixels, HWC" }],
  outputs: (p) => [
    {
      name: "y",
      datatypes: PIXEL_TYPES,
      dims:
        p.fit === "exact" || p.fit === "cover"
          ? [p.height, p.width, "C"]
          : p.fit === "height"
            ? [p.height, -1, "C"]
            : [-1, -1, "C"],
      doc: "Resized pixels, HWC, same datatype",
    },
  ],
});

const normalize = define({
  name: "image.normalize",
  category: "image",
  title: "Normalize: (v * scale - mean) / std per channel",
  doc:
    "Per channel c: y = (x * scale - mean[c]) / std[c], as FP32 (computed in FP64). mean and std hold one value " +
    "for every channel or one per channel. ImageNet: scale 1/255, mean [0.485, 0.456, 0.406], std [0.229, 0.224, " +
    "0.225]; [-1, 1]: scale 1/255, mean [0.5], std [0.5].",
  params: z
    .strictObject({
      scale: finite("scale").default(1 / 255),
      mean: z.array(finite("mean[]"), { error: "mean must be an array of numbers" }).min(1).max(64).default([0]),
      std: z
        .array(
          finite("std[]").refine((v) => v !== 0, { error: "std values must not be 0" }),
          {
            error: "std must be an array of non-zero numbers",
          },
        )
        .min(1)
        .max(64)
        .default([1]),
      layout: layout(),
    })
    .refine((p) => p.mean.length === 1 || p.std.length === 1 || p.mean.length === p.std.length, {
      error: "mean and std must have the same length (or one of them a single value)",
      path: ["std"],
    }),
  inputs: (p) => [{ name: "x", datatypes: NUMERIC, dims: pixelDims(p.layout, "H", "W"), doc: "Pixels" }],
  outputs: (p) => [{ name: "y", datatypes: ["FP32"], dims: pixelDims(p.layout, "H", "W"), doc: "Normalized, FP32" }],
});

const changeLayout = define({
  name: "image.layout",
  category: "image",
  title: "Layout: HWC <-> CHW",
  doc: "Transposes pixels between channels-last (HWC, what decoders give) and channels-first (CHW, what most vision models take). Any datatype.",
  params: z
    .strictObject({
      from: z.enum(["HWC", "CHW"], { error: 'from must be "HWC" or "CHW"' }).default("HWC"),
      to: z.enum(["HWC", "CHW"], { error: 'to must be "HWC" or "CHW"' }).default("CHW"),
    })
    .refine((p) => p.from !== p.to, { error: "to must differ from from", path: ["to"] }),
  inputs: (p) => [{ name: "x", datatypes: NUMERIC, dims: pixelDims(p.from, "H", "W"), doc: "Pixels" }],
  outputs: (p) => [{ name: "y", datatypes: NUMERIC, dims: pixelDims(p.to, "H", "W"), doc: "The same pixels" }],
});

const swapRb = define({
  name: "image.swap-rb",
  category: "image",
  title: "Colour order: RGB <-> BGR",
  doc: "Swaps the first and third channel (RGB <-> BGR; a fourth, alpha, stays). OpenCV-trained models (PP-OCR, many Caffe models) expect BGR.",
  params: z.strictObject({ layout: layout() }),
  inputs: (p) => [{ name: "x", datatypes: NUMERIC, dims: pixelDims(p.layout, "H", "W"), doc: "3 or 4 channels" }],
  outputs: (p) => [{ name: "y", datatypes: NUMERIC, dims: pixelDims(p.layout, "H", "W"), doc: "Swapped" }],
});

const pad = define({
  name: "image.pad",
  category: "image",
  title: "Pad to height x width",
  doc: "Pads pixels to height x width with a constant, placing the image at the top-left or the centre. An image larger than the target fails its request (crop or resize it first).",
  example: { height: 224, width: 224 },
  params: z.strictObject({
    height: side("height"),
    width: side("width"),
    value: finite("value").default(0),
    position: z.enum(["top-left", "center"], { error: 'position must be "top-left" or "center"' }).default("top-left"),
    layout: layout(),
  }),
  inputs: (p) => [{ name: "x", datatypes: NUMERIC, dims: pixelDims(p.layout, "H", "W"), doc: "Pixels" }],
  outputs: (p) => [{ name: "y", datatypes: NUMERIC, dims: pixelDims(p.layout, p.height, p.width), doc: "Padded" }],
});

const crop = define({
  name: "image.crop",
  category: "image",
  title: "Crop height x width",
  doc: "Cuts a height x width window out of the pixels: at top/left when given, else centred. A window that does not fit fails its request.",
  example: { height: 224, width: 224 },
  params: z.strictObject({
    height: side("height"),
    width: side("width"),
    top: nonNegativeInt("top").optional(),
    left: nonNegativeInt("left").optional(),
    layout: layout(),
  }),
  inputs: (p) => [{ name: "x", datatypes: NUMERIC, dims: pixelDims(p.layout, "H", "W"), doc: "Pixels" }],
  outputs: (p) => [{ name: "y", datatypes: NUMERIC, dims: pixelDims(p.layout, p.height, p.width), doc: "Cropped" }],
});

const tokenize = define({
  name: "text.tokenize",
  category: "text",
  title: "Tokenize text with a tokenizer.json",
  doc:
    "Encodes one UTF-8 string (BYTES, one element) with a Hugging Face tokenizer.json from the model's folder " +
    "(@huggingface/tokenizers). Gives input_ids and attention_mask (INT64). padding max_length pads to maxLength " +
    "with the tokenizer's pad token (attention 0); truncation cuts to maxLength, else a longer text fails its request.",
  params: z.strictObject({
    file: fileName("file").default("tokenizer.json"),
    maxLength: positiveInt("maxLength").max(65536, { error: "maxLength must be at most 65536" }).default(128),
    padding: z.enum(["max_length", "none"], { error: 'padding must be "max_length" or "none"' }).default("max_length"),
    truncation: z.boolean({ error: "truncation must be a boolean" }).default(true),
    addSpecialTokens: z.boolean({ error: "addSpecialTokens must be a boolean" }).default(true),
  }),
  inputs: () => [{ name: "text", datatypes: ["BYTES"], dims: [1], doc: "The text" }],
  outputs: (p) => {
    const length = p.padding === "max_length" ? p.maxLength : -1;
    return [
      { name: "input_ids", datatypes: ["INT64"], dims: [length], doc: "Token ids" },
      { name: "attention_mask", datatypes: ["INT64"], dims: [length], doc: "1 for tokens, 0 for padding" },
    ];
  },
  files: (p) => [p.file],
});

const softmax = define({
  name: "tensor.softmax",
  category: "tensor",
  title: "Softmax along an axis",
  doc: "exp(x - max) / sum along the axis (default the last), in FP64, as FP32.",
  params: z.strictObject({ axis: axis() }),
  inputs: () => [{ name: "x", datatypes: NUMERIC, dims: ["..."], doc: "Scores" }],
  outputs: () => [{ name: "y", datatypes: ["FP32"], dims: ["..."], doc: "Probabilities" }],
});

const argmax = define({
  name: "tensor.argmax",
  category: "tensor",
  title: "Argmax along an axis",
  doc: "The index of the largest value along the axis (ties: the lower index; NaN ranks last), as INT64; the axis is removed.",
  params: z.strictObject({ axis: axis() }),
  inputs: () => [{ name: "x", datatypes: NUMERIC, dims: ["..."], doc: "Scores" }],
  outputs: () => [{ name: "index", datatypes: ["INT64"], dims: ["..."], doc: "Indices" }],
});

const topk = define({
  name: "tensor.topk",
  category: "tensor",
  title: "Top-k classes, with labels from a file",
  doc:
    "The k largest values of the last axis, best first (ties: the lower index first; NaN ranks last): score " +
    "(FP32), index (INT64) and, with labels (a file of the model's folder, one label per line in class order, blank " +
    "lines skipped), label (BYTES). The number of classes must equal the number of labels.",
  params: z.strictObject({
    k: positiveInt("k").default(1),
    labels: fileName("labels").optional(),
  }),
  inputs: () => [{ name: "x", datatypes: NUMERIC, dims: ["N"], doc: "Scores per class (last axis)" }],
  outputs: (p) => [
    ...(p.labels !== undefined
      ? [{ name: "label", datatypes: ["BYTES"] as DataType[], dims: [p.k], doc: "Labels, best first" }]
      : []),
    { name: "score", datatypes: ["FP32"], dims: [p.k], doc: "Scores, best first" },
    { name: "index", datatypes: ["INT64"], dims: [p.k], doc: "Class indices, best first" },
  ],
  files: (p) => (p.labels !== undefined ? [p.labels] : []),
});

const threshold = define({
  name: "tensor.threshold",
  category: "tensor",
  title: "Threshold: x > value",
  doc: "BOOL per element: x > value (x >= value with inclusive).",
  example: { value: 0.5 },
  params: z.strictObject({
    value: finite("value"),
    inclusive: z.boolean({ error: "inclusive must be a boolean" }).default(false),
  }),
  inputs: () => [{ name: "x", datatypes: NUMERIC, dims: ["..."], doc: "Values" }],
  outputs: () => [{ name: "y", datatypes: ["BOOL"], dims: ["..."], doc: "Same shape" }],
});

const cast = define({
  name: "tensor.cast",
  category: "tensor",
  title: "Cast to another datatype",
  doc: "Converts every element (to an integer type: rounded toward zero, wrapping as C does; to BOOL: non-zero is true).",
  example: { to: "FP32" },
  params: z.strictObject({
    to: z.enum(NUMERIC_DATATYPES, { error: `to must be one of ${NUMERIC_DATATYPES.join(", ")}` }),
  }),
  inputs: () => [{ name: "x", datatypes: NUMERIC, dims: ["..."], doc: "Values" }],
  outputs: (p) => [{ name: "y", datatypes: [p.to], dims: ["..."], doc: "Same shape" }],
});

const reshape = define({
  name: "tensor.reshape",
  category: "tensor",
  title: "Reshape",
  doc: "The same elements under another shape; one dimension may be -1 (inferred). The element count must match.",
  example: { shape: [-1] },
  params: z.strictObject({
    shape: z
      .array(
        z
          .int({ error: "shape entries must be integers >= -1" })
          .min(-1, { error: "shape entries must be integers >= -1" }),
        {
          error: "shape must be an array of integers",
        },
      )
      .refine((dims) => dims.filter((d) => d === -1).length <= 1, { error: "shape may hold at most one -1" }),
  }),
  inputs: () => [{ name: "x", datatypes: [...NUMERIC, "BYTES"], dims: ["..."], doc: "Any tensor" }],
  outputs: (p) => [{ name: "y", datatypes: [...NUMERIC, "BYTES"], dims: p.shape, doc: "Reshaped" }],
});

const concat = define({
  name: "tensor.concat",
  category: "tensor",
  title: "Concatenate along an axis",
  doc: "Joins count tensors (x0, x1, ...) of one datatype along the axis; the other dimensions must agree.",
  params: z.strictObject({
    count: z
      .int({ error: "count must be an integer from 2 to 8" })
      .min(2, { error: "count must be an integer from 2 to 8" })
      .max(8, { error: "count must be an integer from 2 to 8" })
      .default(2),
    axis: z.int({ error: "axis must be an integer (negative counts from the end)" }).default(0),
  }),
  inputs: (p) =>
    Array.from({ length: p.count }, (_, i) => ({ name: `x${i}`, datatypes: NUMERIC, dims: ["..."], doc: `Part ${i}` })),
  outputs: () => [{ name: "y", datatypes: NUMERIC, dims: ["..."], doc: "Joined" }],
});

const split = define({
  name: "tensor.split",
  category: "tensor",
  title: "Split along an axis",
  doc: "Cuts the tensor along the axis into parts of the given sizes (y0, y1, ...); the sizes must add up to the axis' length.",
  example: { sizes: [1, 1] },
  params: z.strictObject({
    sizes: z
      .array(positiveInt("sizes[]"), { error: "sizes must be an array of integers >= 1" })
      .min(2, {
        error: "sizes must name at least 2 parts",
      })
      .max(8, { error: "sizes may name at most 8 parts" }),
    axis: z.int({ error: "axis must be an integer (negative counts from the end)" }).default(0),
  }),
  inputs: () => [{ name: "x", datatypes: NUMERIC, dims: ["..."], doc: "The tensor" }],
  outputs: (p) =>
    p.sizes.map((size, i) => ({
      name: `y${i}`,
      datatypes: NUMERIC,
      dims: ["..."],
      doc: `Part ${i} (${size} along the axis)`,
    })),
});

/** Every built-in step, in palette order. */
export const STEP_CATALOG: readonly StepDefinition<any>[] = [
  decode,
  resize,
  normalize,
  changeLayout,
  swapRb,
  pad,
  crop,
  tokenize,
  softmax,
  argmax,
  topk,
  threshold,
  cast,
  reshape,
  concat,
  split,
];

export function findStep(name: string): StepDefinition<unknown> | undefined {
  return STEP_CATALOG.find((step) => step.name === name);
}

/** What went wrong with a step's parameters, one message per problem, each starting with its field. */
export type ParamsResult<P> = { ok: true; params: P } | { ok: false; problems: string[] };

export function parseStepParams(name: string, raw: unknown): ParamsResult<unknown> {
  const step = findStep(name);
  if (step === undefined) {
    return {
      ok: false,
      problems: [`step '${name}' is not a built-in step (known: ${STEP_CATALOG.map((s) => s.name).join(", ")})`],
    };
  }
  const result = step.params.safeParse(raw ?? {});
  if (result.success) return { ok: true, params: result.data };
  return {
    ok: false,
    problems: result.error.issues.map((issue) => {
      const path = issue.path.map(String).join(".");
      // Messages written here start with their field; zod's own (unknown keys, wrong container) get the path first.
      if (issue.code === "unrecognized_keys") {
        const keys = (issue as { keys?: string[] }).keys ?? [];
        return `params${path ? `.${path}` : ""}: unknown parameter${keys.length > 1 ? "s" : ""} ${keys.map((k) => `'${k}'`).join(", ")}`;
      }
      const field = issue.path[issue.path.length - 1];
      const named = typeof field === "string" && issue.message.startsWith(field.replace(/\[\]$/, ""));
      return named ? `params.${issue.message}` : `params${path ? `.${path}` : ""}: ${issue.message}`;
    }),
  };
}
