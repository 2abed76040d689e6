/**
 * Sizes for an input's variable dimensions when nobody gave them: what an
 * automatic perf run, a config search or a first look at the console's form
 * uses, so that a model declaring `x [3,48,-1]` (an OCR recogniser),
 * `[3,-1,-1]` (a CNN exported with dynamic spatial dims) or `[-1]` (a
 * sequence) can be measured without a `--shape` flag. perf_analyzer refuses
 * such a model; Model Analyzer asks for the shapes in its config. Guessing a
 * plausible size and showing it (the report records the shapes used) is the
 * kinder default; the console lets the model's owner change it.
 *
 * The guesses follow the layouts such models use:
 * - image-like CHW (`[1|3, H, W]`) or HWC (`[H, W, 1|3]`): a missing side is
 *   224 (ImageNet's size), or, when the other side is fixed and short (text
 *   line height <= 64, as OCR models take), 320 wide (PaddleOCR's default
 *   recognition width);
 * - anything else: 16 per variable dim (a short sequence or a small list).
 */
export const DEFAULT_IMAGE_SIDE = 224;
export const DEFAULT_TEXT_LINE_WIDTH = 320;
export const DEFAULT_OTHER_DIM = 16;
/** Text-line images are at most this tall (PaddleOCR: 32 or 48). */
const TEXT_LINE_MAX_HEIGHT = 64;

/** Dims (batch dimension excluded) with every -1 replaced by a suggested size; fixed dims are kept. */
export function suggestDims(dims: readonly number[]): number[] {
  const image = imageAxes(dims);
  return dims.map((dim, index) => {
    if (dim >= 0) return dim;
    if (image === undefined || !image.spatial.includes(index)) return DEFAULT_OTHER_DIM;
    const other = dims[image.spatial.find((axis) => axis !== index)!]!;
    if (other >= 0 && other <= TEXT_LINE_MAX_HEIGHT && index === image.spatial[1]) return DEFAULT_TEXT_LINE_WIDTH;
    return other >= 0 ? other : DEFAULT_IMAGE_SIDE;
  });
}

/** True when some dim is variable (-1). */
export function hasVariableDims(dims: readonly number[]): boolean {
  return dims.some((dim) => dim < 0);
}

/** The spatial axes (height, width) of a rank-3 image layout, if the dims look like one. */
function imageAxes(dims: readonly number[]): { spatial: [number, number] } | undefined {
  if (dims.length !== 3) return undefined;
  const channels = (dim: number | undefined): boolean => dim === 1 || dim === 3 || dim === 4;
  if (channels(dims[0])) return { spatial: [1, 2] };
  if (channels(dims[2])) return { spatial: [0, 1] };
  return undefined;
}
