/**
 * text_direction_preprocess: PNG bytes -> the text-direction classifier's
 * input `x` FP32 [3, 48, 192] (see ../config.pbtxt), as PP-OCR's
 * `TextClassifier.resize_norm_img` prepares a text-line crop:
 *
 *   1. decode the PNG (pngjs: any colour type and bit depth, interlaced or
 *      not, as 8-bit RGBA; alpha is ignored, as cv2.imread ignores it);
 *   2. resize to height 48 keeping the aspect ratio: width
 *      min(192, ceil(48 * w / h)); bilinear with half-pixel centres and edge
 *      clamping, like cv2.INTER_LINEAR, rounded to 8 bits as cv2 does for
 *      an 8-bit image;
 *   3. normalize each value v to (v / 255 - 0.5) / 0.5, in [-1, 1];
 *   4. lay out CHW with the channels in BGR order (PP-OCR's images come
 *      from OpenCV, which reads BGR), zero-padded on the right to 192.
 *
 * Each request's `image` is a [batch, 1] BYTES tensor, one PNG file per
 * element. An element that is not a decodable PNG fails its request with
 * INVALID_ARG naming the element and the problem (not a PNG, truncated,
 * corrupt, too large); the other requests of the execute() batch are
 * answered as usual.
 */
import { crc32 } from "node:zlib";
import pngjs from "pngjs";
import type { ExecuteContext, InitializeArgs, TypedRequest, TypedResponse } from "@operon/backend-api/typescript-model-api";

const { PNG } = pngjs;

const CHANNELS = 3;
const HEIGHT = 48;
const WIDTH = 192;
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const DEFAULT_MAX_PIXELS = 4096 * 4096;

/** A problem with one input image (becomes the request's INVALID_ARG). */
class BadImage extends Error {}

export default class TextDirectionPreprocess {
  private maxPixels = DEFAULT_MAX_PIXELS;

  initialize(args: InitializeArgs): void {
    const raw = args.parameters.max_pixels;
    if (raw !== undefined && raw.trim() !== "") {
      const value = Number(raw);
      if (!Number.isSafeInteger(value) || value <= 0) throw new Error(`parameter 'max_pixels' must be a positive integer, got '${raw}'`);
      this.maxPixels = value;
    }
  }

  execute(requests: TypedRequest[], ctx: ExecuteContext): Array<TypedResponse | Error> {
    return requests.map((request): TypedResponse | Error => {
      const image = request.input("image");
      if (image.datatype !== "BYTES") return ctx.error("INVALID_ARG", `input 'image' must be BYTES (PNG files), got ${image.datatype}`);
      const files = image.toBuffers();
      const batch = files.length;
      const x = new Float32Array(batch * CHANNELS * HEIGHT * WIDTH);
      for (let i = 0; i < batch; i += 1) {
        const where = batch > 1 ? `input 'image' element ${i} of ${batch}` : "input 'image'";
        try {
          const { width, height, rgba } = this.decode(files[i]!);
          preprocess(rgba, width, height, x.subarray(i * CHANNELS * HEIGHT * WIDTH, (i + 1) * CHANNELS * HEIGHT * WIDTH));
        } catch (error) {
          if (error instanceof BadImage) return ctx.error("INVALID_ARG", `${where}: ${error.message}`);
          throw error;
        }
      }
      return { outputs: [ctx.tensor.fromTypedArray("x", [batch, CHANNELS, HEIGHT, WIDTH], x)] };
    });
  }

  /** The PNG's pixels as 8-bit RGBA; throws BadImage saying what is wrong with the file. */
  private decode(file: Buffer): { width: number; height: number; rgba: Uint8Array } {
    const { width, height } = checkStructure(file, this.maxPixels);
    let decoded: { width: number; height: number; data: Buffer };
    try {
      decoded = PNG.sync.read(file);
    } catch (error) {
      throw new BadImage(`corrupt PNG (${width}x${height}): ${(error as Error).message}`);
    }
    if (decoded.data.length !== decoded.width * decoded.height * 4) {
      throw new BadImage(`corrupt PNG: decoded ${decoded.data.length} bytes for ${decoded.width}x${decoded.height} pixels`);
    }
    return { width: decoded.width, height: decoded.height, rgba: decoded.data };
  }
}

/**
 * Walks the PNG's chunks before decoding, so that a bad file gets a message
 * that says what is wrong (the decoder's own errors are terse): the
 * signature, a complete IHDR first, every chunk complete with a correct
 * CRC, image data, and IEND. Returns the header's size.
 */
function checkStructure(file: Buffer, maxPixels: number): { width: number; height: number } {
  if (file.length === 0) throw new BadImage("empty (0 bytes); expected a PNG file");
  if (file.length < PNG_SIGNATURE.length || !file.subarray(0, PNG_SIGNATURE.length).equals(PNG_SIGNATURE)) {
    const head = file.subarray(0, 8).toString("hex").replace(/(..)(?!$)/g, "$1 ");
    const jpeg = file.length >= 3 && file[0] === 0xff && file[1] === 0xd8 && file[2] === 0xff ? " (it looks like a JPEG; this model decodes PNG only)" : "";
    throw new BadImage(`not a PNG: ${file.length} bytes that do not start with the PNG signature (they start with ${head})${jpeg}`);
  }
  let offset = PNG_SIGNATURE.length;
  let width = 0;
  let height = 0;
  let sawData = false;
  for (let index = 0; ; index += 1) {
    if (offset + 8 > file.length) {
      throw new BadImage(`truncated PNG: the file ends after ${file.length} bytes, before its IEND chunk`);
    }
    const length = file.readUInt32BE(offset);
    const type = file.toString("latin1", offset + 4, offset + 8);
    if (!/^[A-Za-z]{4}$/.test(type)) throw new BadImage(`corrupt PNG: invalid chunk type at byte ${offset + 4}`);
    if (offset + 12 + length > file.length) {
      throw new BadImage(
        `truncated PNG: chunk ${type} at byte ${offset} declares ${length} bytes of data but the file ends after ${file.length} bytes`,
      );
    }
    if (crc32(file.subarray(offset + 4, offset + 8 + length)) !== file.readUInt32BE(offset + 8 + length)) {
      throw new BadImage(`corrupt PNG: chunk ${type} at byte ${offset} fails its CRC check`);
    }
    if (index === 0) {
      if (type !== "IHDR" || length !== 13) throw new BadImage(`corrupt PNG: the first chunk must be a 13-byte IHDR, found ${type} of ${length} bytes`);
      width = file.readUInt32BE(offset + 8);
      height = file.readUInt32BE(offset + 12);
      if (width === 0 || height === 0) throw new BadImage(`corrupt PNG: the header says ${width}x${height} pixels`);
      if (width * height > maxPixels) throw new BadImage(`image too large: ${width}x${height} pixels, at most ${maxPixels} are accepted`);
    }
    if (type === "IDAT") sawData = true;
    if (type === "IEND") break;
    offset += 12 + length;
  }
  if (!sawData) throw new BadImage("corrupt PNG: it has no image data (IDAT chunk)");
  return { width, height };
}

/** PP-OCR's cls preprocessing of one RGBA image into `out` (CHW, BGR, 3x48x192; `out` starts zeroed). */
// Exported for the benchmark (bench/native-backends.mjs), which times it against the native step.
export function preprocess(rgba: Uint8Array, width: number, height: number, out: Float32Array): void {
  const resizedWidth = Math.min(WIDTH, Math.ceil(HEIGHT * (width / height)));
  const xs = axis(width, resizedWidth);
  const ys = axis(height, HEIGHT);
  const plane = HEIGHT * WIDTH;
  for (let dy = 0; dy < HEIGHT; dy += 1) {
    const { low: y0, high: y1, weight: wy } = ys[dy]!;
    for (let dx = 0; dx < resizedWidth; dx += 1) {
      const { low: x0, high: x1, weight: wx } = xs[dx]!;
      const p00 = (y0 * width + x0) * 4;
      const p01 = (y0 * width + x1) * 4;
      const p10 = (y1 * width + x0) * 4;
      const p11 = (y1 * width + x1) * 4;
      for (let c = 0; c < CHANNELS; c += 1) {
        const top = rgba[p00 + c]! * (1 - wx) + rgba[p01 + c]! * wx;
        const bottom = rgba[p10 + c]! * (1 - wx) + rgba[p11 + c]! * wx;
        const value = Math.round(top * (1 - wy) + bottom * wy);
        // RGBA channel c lands in BGR plane 2 - c.
        out[(2 - c) * plane + dy * WIDTH + dx] = (value / 255 - 0.5) / 0.5;
      }
    }
  }
}

/** For each output coordinate, the two source coordinates and the weight of the second (cv2.INTER_LINEAR's half-pixel mapping). */
function axis(source: number, target: number): Array<{ low: number; high: number; weight: number }> {
  const scale = source / target;
  return Array.from({ length: target }, (_, i) => {
    const position = (i + 0.5) * scale - 0.5;
    let low = Math.floor(position);
    let weight = position - low;
    if (low < 0) {
      low = 0;
      weight = 0;
    }
    if (low >= source - 1) {
      low = source - 1;
      weight = 0;
    }
    return { low, high: Math.min(low + 1, source - 1), weight };
  });
}
