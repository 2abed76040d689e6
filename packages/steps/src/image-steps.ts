import sharp, { type Metadata, type OutputInfo } from "sharp";
import {
  allocate,
  describeShape,
  expectTensor,
  isNumeric,
  type NumericArray,
  type NumericDataType,
  type StepFactory,
  StepInputError,
  type StepRun,
  type StepTensor,
  stepInput as input,
} from "./step-tensor.js";

/**
 * Image steps. Decoding and the libvips kernels go through sharp (its work
 * runs on libuv's thread pool, off the worker's event loop); bilinear
 * resizing, normalization and the layout steps are plain loops, written to
 * do the same arithmetic as PP-OCR's OpenCV preprocessing so that a
 * pipeline of them reproduces it exactly.
 */

type Layout = "HWC" | "CHW";

const FORMATS = new Set(["png", "jpeg", "webp"]);

/** H, W, C of pixels in a layout. */
function dimsOf(tensor: StepTensor, layout: Layout): { h: number; w: number; c: number } {
  expectTensor(tensor, "input 'x'", undefined, [3]);
  const [a, b, c] = tensor.shape as [number, number, number];
  return layout === "HWC" ? { h: a, w: b, c } : { c: a, h: b, w: c };
}

function numericInput(tensor: StepTensor): NumericArray {
  if (!isNumeric(tensor)) throw new StepInputError("input 'x' must be numeric pixels, got BYTES");
  return tensor.data;
}

/** The format a file's first bytes announce, among the three image.decode reads (libvips sniffs the same bytes). */
function sniffFormat(file: Buffer): "png" | "jpeg" | "webp" | undefined {
  if (file.length >= 8 && file.readUInt32BE(0) === 0x89504e47 && file.readUInt32BE(4) === 0x0d0a1a0a) return "png";
  if (file.length >= 3 && file[0] === 0xff && file[1] === 0xd8 && file[2] === 0xff) return "jpeg";
  if (file.length >= 12 && file.toString("latin1", 0, 4) === "RIFF" && file.toString("latin1", 8, 12) === "WEBP")
    return "webp";
  return undefined;
}

/**
 * Why a file did not decode, in words (the error path only): libvips' own
 * message names neither the format nor the size, so the header is read
 * again to say which of unreadable / unsupported format / too large /
 * corrupt it is.
 */
async function explainDecodeFailure(file: Buffer, maxPixels: number, cause: Error): Promise<StepInputError> {
  let metadata: Metadata;
  try {
    metadata = await sharp(file, { limitInputPixels: false }).metadata();
  } catch (error) {
    const head = file
      .subarray(0, 8)
      .toString("hex")
      .replace(/(..)(?!$)/g, "$1 ");
    return new StepInputError(
      `input 'image' is not a readable image (${file.length} bytes starting ${head}): ${(error as Error).message}`,
    );
  }
  if (metadata.format === undefined || !FORMATS.has(metadata.format)) {
    return new StepInputError(
      `input 'image' is ${metadata.format ?? "an unknown format"}; image.decode reads PNG, JPEG and WebP`,
    );
  }
  const { width, height } = metadata;
  if (width === undefined || height === undefined || width === 0 || height === 0) {
    return new StepInputError(`input 'image': the ${metadata.format} header declares no size`);
  }
  if (width * height > maxPixels) {
    return new StepInputError(
      `input 'image' is too large: ${width}x${height} pixels, at most ${maxPixels} are accepted (parameter maxPixels)`,
    );
  }
  return new StepInputError(`input 'image': corrupt ${metadata.format} (${width}x${height}): ${cause.message}`);
}

const decode: StepFactory = (params: { channels: 1 | 3 | 4; maxPixels: number }): StepRun => {
  return async (inputs) => {
    const image = input(inputs, "image");
    expectTensor(image, "input 'image'", ["BYTES"]);
    const files = image.data as Buffer[];
    if (files.length !== 1) {
      throw new StepInputError(`input 'image' must hold one file per sample, got ${files.length} elements`);
    }
    const file = files[0]!;
    if (file.length === 0)
      throw new StepInputError("input 'image' is empty (0 bytes); expected a PNG, JPEG or WebP file");
    // One libvips call per image on the way that succeeds (bench §8: a
    // separate metadata() call first was a second trip through libuv's
    // thread pool, about as costly as the decode of a small image itself).
    // The format is checked on the file's magic bytes and the size by
    // libvips' own pixel limit, before it decodes; only a failure reads the
    // header again, to say what is wrong (explainDecodeFailure).
    if (sniffFormat(file) === undefined)
      throw await explainDecodeFailure(file, params.maxPixels, new Error("unsupported format"));
    let pipeline = sharp(file, { limitInputPixels: params.maxPixels, failOn: "error" });
    if (params.channels === 1) pipeline = pipeline.toColourspace("b-w");
    else if (params.channels === 3) pipeline = pipeline.removeAlpha().toColourspace("srgb");
    else pipeline = pipeline.ensureAlpha().toColourspace("srgb");
    let decoded: { data: Buffer; info: OutputInfo };
    try {
      decoded = await pipeline.raw({ depth: "uchar" }).toBuffer({ resolveWithObject: true });
    } catch (error) {
      throw await explainDecodeFailure(file, params.maxPixels, error as Error);
    }
    const { info, data } = decoded;
    if (info.channels !== params.channels || data.length !== info.width * info.height * params.channels) {
      throw new StepInputError(
        `input 'image': decoding gave ${info.channels} channels of ${info.width}x${info.height}, expected ${params.channels}`,
      );
    }
    // A view of sharp's own buffer (fresh for each call), not a copy.
    const pixels = new Uint8Array(data.buffer, data.byteOffset, data.length);
    return { y: { datatype: "UINT8", shape: [info.height, info.width, params.channels], data: pixels } };
  };
};

interface ResizeParams {
  height: number;
  width: number;
  fit: "exact" | "contain" | "cover" | "height";
  interpolation: "bilinear" | "nearest" | "cubic" | "lanczos3";
}

/** The size to resize to, and (cover) the window to cut from it. */
export function resizeTarget(
  h: number,
  w: number,
  p: Pick<ResizeParams, "height" | "width" | "fit">,
): { h: number; w: number; crop?: { top: number; left: number } } {
  switch (p.fit) {
    case "exact":
      return { h: p.height, w: p.width };
    case "height":
      // PP-OCR's resize_norm_img: width ceil(height * aspect), at most the target width.
      return { h: p.height, w: Math.min(p.width, Math.ceil(p.height * (w / h))) };
    case "contain": {
      const scale = Math.min(p.height / h, p.width / w);
      return {
        h: Math.min(p.height, Math.max(1, Math.round(h * scale))),
        w: Math.min(p.width, Math.max(1, Math.round(w * scale))),
      };
    }
    case "cover": {
      const scale = Math.max(p.height / h, p.width / w);
      const rh = Math.max(p.height, Math.round(h * scale));
      const rw = Math.max(p.width, Math.round(w * scale));
      return { h: rh, w: rw, crop: { top: Math.floor((rh - p.height) / 2), left: Math.floor((rw - p.width) / 2) } };
    }
  }
}

/** For each output coordinate, the two source coordinates and the weight of the second (cv2.INTER_LINEAR's half-pixel mapping). */
function axisWeights(source: number, target: number): { low: Int32Array; high: Int32Array; weight: Float64Array } {
  const scale = source / target;
  const low = new Int32Array(target);
  const high = new Int32Array(target);
  const weight = new Float64Array(target);
  for (let i = 0; i < target; i += 1) {
    const position = (i + 0.5) * scale - 0.5;
    let l = Math.floor(position);
    let wgt = position - l;
    if (l < 0) {
      l = 0;
      wgt = 0;
    }
    if (l >= source - 1) {
      l = source - 1;
      wgt = 0;
    }
    low[i] = l;
    high[i] = Math.min(l + 1, source - 1);
    weight[i] = wgt;
  }
  return { low, high, weight };
}

/** Bilinear HWC resize; UINT8 results are rounded to 8 bits as cv2 does. */
export function bilinearResize(
  data: NumericArray,
  datatype: NumericDataType,
  h: number,
  w: number,
  c: number,
  outH: number,
  outW: number,
): NumericArray {
  const out = allocate(datatype, outH * outW * c) as Float32Array | Uint8Array;
  const source = data as Float32Array | Uint8Array;
  const xs = axisWeights(w, outW);
  const ys = axisWeights(h, outH);
  const round = datatype === "UINT8";
  for (let dy = 0; dy < outH; dy += 1) {
    const y0 = ys.low[dy]!;
    const y1 = ys.high[dy]!;
    const wy = ys.weight[dy]!;
    for (let dx = 0; dx < outW; dx += 1) {
      const x0 = xs.low[dx]!;
      const x1 = xs.high[dx]!;
      const wx = xs.weight[dx]!;
      const p00 = (y0 * w + x0) * c;
      const p01 = (y0 * w + x1) * c;
      const p10 = (y1 * w + x0) * c;
      const p11 = (y1 * w + x1) * c;
      const o = (dy * outW + dx) * c;
      for (let k = 0; k < c; k += 1) {
        const top = source[p00 + k]! * (1 - wx) + source[p01 + k]! * wx;
        const bottom = source[p10 + k]! * (1 - wx) + source[p11 + k]! * wx;
        const value = top * (1 - wy) + bottom * wy;
        out[o + k] = round ? Math.round(value) : value;
      }
    }
  }
  return out;
}

function cropHwc(
  data: NumericArray,
  w: number,
  c: number,
  top: number,
  left: number,
  outH: number,
  outW: number,
): NumericArray {
  const out = new (data.constructor as new (n: number) => NumericArray)(outH * outW * c);
  for (let y = 0; y < outH; y += 1) {
    const start = ((top + y) * w + left) * c;
    (out as Uint8Array).set((data as Uint8Array).subarray(start, start + outW * c), y * outW * c);
  }
  return out;
}

const resize: StepFactory = (params: ResizeParams): StepRun => {
  return async (inputs) => {
    const x = input(inputs, "x");
    expectTensor(x, "input 'x'", ["UINT8", "FP32"], [3]);
    const { h, w, c } = dimsOf(x, "HWC");
    if (h === 0 || w === 0) throw new StepInputError(`input 'x' is empty: shape ${describeShape(x.shape)}`);
    const target = resizeTarget(h, w, params);
    const data = numericInput(x);
    let out: NumericArray;
    if (params.interpolation === "bilinear") {
      out = bilinearResize(data, x.datatype as NumericDataType, h, w, c, target.h, target.w);
    } else {
      if (x.datatype !== "UINT8") {
        throw new StepInputError(
          `interpolation '${params.interpolation}' needs UINT8 pixels, got ${x.datatype} (use bilinear)`,
        );
      }
      if (c < 1 || c > 4)
        throw new StepInputError(`interpolation '${params.interpolation}' needs 1 to 4 channels, got ${c}`);
      const resized = await sharp(Buffer.from(data.buffer, data.byteOffset, data.byteLength), {
        raw: { width: w, height: h, channels: c as 1 | 2 | 3 | 4 },
      })
        .resize(target.w, target.h, {
          fit: "fill",
          kernel: params.interpolation === "lanczos3" ? "lanczos3" : params.interpolation,
        })
        .raw()
        .toBuffer();
      out = new Uint8Array(resized);
    }
    if (target.crop !== undefined) {
      out = cropHwc(out, target.w, c, target.crop.top, target.crop.left, params.height, params.width);
      return { y: { datatype: x.datatype, shape: [params.height, params.width, c], data: out } };
    }
    return { y: { datatype: x.datatype, shape: [target.h, target.w, c], data: out } };
  };
};

/**
 * Below this many elements image.normalize stays in TypeScript even where
 * the native kernel is there: a call through the backend API costs ~30 µs
 * whatever the size, about what TypeScript takes for 16 K 8-bit values
 * (bench/numeric-steps-native.mjs).
 */
const NATIVE_NORMALIZE_MIN_ELEMENTS = 16384;

const normalize: StepFactory = async (
  params: { scale: number; mean: number[]; std: number[]; layout: Layout },
  env,
): Promise<StepRun> => {
  // 4–11× faster from 224×224 up (bench/numeric-steps-native.mjs): 8-bit HWC pixels go native when the worker has it.
  const native = params.layout === "HWC" ? await env.native?.normalize(params) : undefined;
  return async (inputs) => {
    const x = input(inputs, "x");
    const { h, w, c } = dimsOf(x, params.layout);
    for (const [key, values] of [
      ["mean", params.mean],
      ["std", params.std],
    ] as const) {
      if (values.length !== 1 && values.length !== c) {
        throw new StepInputError(`parameter ${key} has ${values.length} values but the pixels have ${c} channels`);
      }
    }
    const data = numericInput(x);
    if (native !== undefined && x.datatype === "UINT8" && data.length >= NATIVE_NORMALIZE_MIN_ELEMENTS) {
      return { y: { datatype: "FP32", shape: [...x.shape], data: await native(data as Uint8Array, [h, w, c]) } };
    }
    const out = new Float32Array(data.length);
    const mean = Array.from({ length: c }, (_, k) => params.mean[params.mean.length === 1 ? 0 : k]!);
    const std = Array.from({ length: c }, (_, k) => params.std[params.std.length === 1 ? 0 : k]!);
    const plane = h * w;
    // Channel by channel, with no per-element division or modulo to find
    // the channel; 8-bit pixels go through a 256-entry table per channel
    // (the same double-precision expression, so the same FP32 values).
    for (let k = 0; k < c; k += 1) {
      const start = params.layout === "HWC" ? k : k * plane;
      const stride = params.layout === "HWC" ? c : 1;
      const end = start + plane * stride;
      if (data instanceof Uint8Array) {
        const table = new Float32Array(256);
        for (let v = 0; v < 256; v += 1) table[v] = (v * params.scale - mean[k]!) / std[k]!;
        for (let i = start; i < end; i += stride) out[i] = table[data[i]!]!;
      } else {
        for (let i = start; i < end; i += stride) out[i] = (Number(data[i]!) * params.scale - mean[k]!) / std[k]!;
      }
    }
    return { y: { datatype: "FP32", shape: [...x.shape], data: out } };
  };
};

const layout: StepFactory = (params: { from: Layout; to: Layout }): StepRun => {
  return async (inputs) => {
    const x = input(inputs, "x");
    const { h, w, c } = dimsOf(x, params.from);
    const data = numericInput(x);
    const out = new (data.constructor as new (n: number) => NumericArray)(data.length) as Uint8Array;
    const source = data as Uint8Array;
    const plane = h * w;
    if (params.from === "HWC") {
      for (let p = 0; p < plane; p += 1) for (let k = 0; k < c; k += 1) out[k * plane + p] = source[p * c + k]!;
    } else {
      for (let k = 0; k < c; k += 1) for (let p = 0; p < plane; p += 1) out[p * c + k] = source[k * plane + p]!;
    }
    return { y: { datatype: x.datatype, shape: params.to === "HWC" ? [h, w, c] : [c, h, w], data: out } };
  };
};

const swapRb: StepFactory = (params: { layout: Layout }): StepRun => {
  return async (inputs) => {
    const x = input(inputs, "x");
    const { h, w, c } = dimsOf(x, params.layout);
    if (c !== 3 && c !== 4) throw new StepInputError(`input 'x' must have 3 or 4 channels to swap R and B, got ${c}`);
    const out = numericInput(x).slice() as Uint8Array;
    const plane = h * w;
    if (params.layout === "HWC") {
      for (let p = 0; p < plane; p += 1) {
        const r = out[p * c]!;
        out[p * c] = out[p * c + 2]!;
        out[p * c + 2] = r;
      }
    } else {
      const red = out.slice(0, plane);
      out.copyWithin(0, 2 * plane, 3 * plane);
      out.set(red, 2 * plane);
    }
    return { y: { datatype: x.datatype, shape: [...x.shape], data: out } };
  };
};

/** Copies a window of one CHW/HWC image into another of the same channels, at (top, left) of the target. */
function blit(
  source: NumericArray,
  target: NumericArray,
  layout: Layout,
  c: number,
  src: { h: number; w: number; top: number; left: number },
  dst: { h: number; w: number; top: number; left: number },
  rows: number,
  cols: number,
): void {
  const s = source as Uint8Array;
  const t = target as Uint8Array;
  if (layout === "HWC") {
    for (let y = 0; y < rows; y += 1) {
      const from = ((src.top + y) * src.w + src.left) * c;
      t.set(s.subarray(from, from + cols * c), ((dst.top + y) * dst.w + dst.left) * c);
    }
  } else {
    for (let k = 0; k < c; k += 1) {
      for (let y = 0; y < rows; y += 1) {
        const from = k * src.h * src.w + (src.top + y) * src.w + src.left;
        t.set(s.subarray(from, from + cols), k * dst.h * dst.w + (dst.top + y) * dst.w + dst.left);
      }
    }
  }
}

const pad: StepFactory = (params: {
  height: number;
  width: number;
  value: number;
  position: "top-left" | "center";
  layout: Layout;
}): StepRun => {
  return async (inputs) => {
    const x = input(inputs, "x");
    const { h, w, c } = dimsOf(x, params.layout);
    if (h > params.height || w > params.width) {
      throw new StepInputError(
        `input 'x' is ${h}x${w} (height x width), larger than the pad target ${params.height}x${params.width}: crop or resize it first`,
      );
    }
    const data = numericInput(x);
    const out = new (data.constructor as new (n: number) => NumericArray)(params.height * params.width * c);
    if (params.value !== 0) {
      if (out instanceof BigInt64Array || out instanceof BigUint64Array) out.fill(BigInt(Math.trunc(params.value)));
      else (out as Float32Array).fill(params.value);
    }
    const top = params.position === "center" ? Math.floor((params.height - h) / 2) : 0;
    const left = params.position === "center" ? Math.floor((params.width - w) / 2) : 0;
    blit(
      data,
      out,
      params.layout,
      c,
      { h, w, top: 0, left: 0 },
      { h: params.height, w: params.width, top, left },
      h,
      w,
    );
    const shape = params.layout === "HWC" ? [params.height, params.width, c] : [c, params.height, params.width];
    return { y: { datatype: x.datatype, shape, data: out } };
  };
};

const crop: StepFactory = (params: {
  height: number;
  width: number;
  top?: number;
  left?: number;
  layout: Layout;
}): StepRun => {
  return async (inputs) => {
    const x = input(inputs, "x");
    const { h, w, c } = dimsOf(x, params.layout);
    const top = params.top ?? Math.floor((h - params.height) / 2);
    const left = params.left ?? Math.floor((w - params.width) / 2);
    if (top < 0 || left < 0 || top + params.height > h || left + params.width > w) {
      throw new StepInputError(
        `the crop window ${params.height}x${params.width} at top ${top}, left ${left} does not fit in the ${h}x${w} input 'x'`,
      );
    }
    const data = numericInput(x);
    const out = new (data.constructor as new (n: number) => NumericArray)(params.height * params.width * c);
    blit(
      data,
      out,
      params.layout,
      c,
      { h, w, top, left },
      { h: params.height, w: params.width, top: 0, left: 0 },
      params.height,
      params.width,
    );
    const shape = params.layout === "HWC" ? [params.height, params.width, c] : [c, params.height, params.width];
    return { y: { datatype: x.datatype, shape, data: out } };
  };
};

export const IMAGE_STEPS: Record<string, StepFactory> = {
  "image.decode": decode,
  "image.resize": resize,
  "image.normalize": normalize,
  "image.layout": layout,
  "image.swap-rb": swapRb,
  "image.pad": pad,
  "image.crop": crop,
};
