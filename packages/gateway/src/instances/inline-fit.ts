import { stat } from "node:fs/promises";
import { readOnnxOperatorsFile } from "@operon/model-config/onnx-signature";
import { elementByteSize } from "@operon/protocol/datatypes";
import type { Tensor } from "@operon/protocol/tensor";
import type { IoInfo } from "@operon/protocol/worker-wire";
import type { BackendInstance } from "./backend-instance.js";
import type { InstancePlacement } from "./instance-placement.js";
import { startLoopHoldClock } from "./loop-hold-clock.js";

/**
 * Whether a model is tiny enough to run on the gateway's event loop without
 * being asked (the "auto" placement, adaptive-instance.ts). Inline, a batch
 * of a tiny model costs its run and nothing else; on a thread it pays two
 * thread wake-ups and a message each way (tens of µs on a loaded host, more
 * than the run itself). But while an inline batch runs, nothing else on the
 * event loop does, so a model is placed there only when its cost is known
 * to be small for every request it can be sent:
 *
 * 1. Before loading (inlineCandidacy): an ONNX Runtime model on the CPU, a
 *    small file, and a graph of operators whose work follows from the
 *    input shapes alone (SHAPE_BOUND_OPERATORS: no Loop/Scan/If, nothing
 *    that sizes its output from the values, such as Range, Expand, Tile,
 *    ConstantOfShape, NonZero, Pad or Resize).
 * 2. After loading (probeInputs): every input of a fixed shape but for the
 *    batch dimension, and of a fixed element size (no BYTES), so the
 *    largest request the model can be sent is max_batch_size rows of known
 *    bytes, at most INLINE_MAX_BATCH_BYTES of them.
 * 3. The probe (measureExecutions): that largest batch, of zeros, runs in
 *    at most INLINE_PROBE_BUDGET_NS: the lower quartile of 20 timed runs
 *    after 10 warm-up ones (the JIT compiles the wrapping code in those).
 *    Not the median: on a loaded 2-core host the OS preempts many runs of a
 *    30 µs model, and the lower quartile still reads what a run costs.
 *    With 1 and 2, no request can cost much more than it did.
 *
 * Values can still move the cost within those bounds (denormal floats slow
 * x86 arithmetic many times over, and a client chooses the values): so
 * while it serves, executions that still take long move the instance to a
 * thread (AdaptiveInstance's SlowExecutions).
 */

/** A model file above this is not tiny: weights that large mean work per row that large. */
export const INLINE_MAX_MODEL_BYTES = 1024 * 1024;

/** The largest request's inputs above this (bytes) are not tiny: decoding them alone would hold the loop. */
export const INLINE_MAX_BATCH_BYTES = 1024 * 1024;

/** The median run of the largest batch must stay under this (ns) for a model to run on the event loop. */
export const INLINE_PROBE_BUDGET_NS = 250_000;

/**
 * ONNX operators (default domain) whose work is bounded by the sizes of their inputs, which the model's
 * declared shapes bound. Conservative on purpose: an operator missing here only keeps a model on a thread.
 */
export const SHAPE_BOUND_OPERATORS: ReadonlySet<string> = new Set([
  // Element-wise.
  "Abs",
  "Add",
  "And",
  "Cast",
  "CastLike",
  "Ceil",
  "Clip",
  "Div",
  "Dropout",
  "Elu",
  "Equal",
  "Erf",
  "Exp",
  "Floor",
  "Gelu",
  "Greater",
  "GreaterOrEqual",
  "HardSigmoid",
  "HardSwish",
  "Identity",
  "IsInf",
  "IsNaN",
  "LeakyRelu",
  "Less",
  "LessOrEqual",
  "Log",
  "Max",
  "Mean",
  "Min",
  "Mod",
  "Mul",
  "Neg",
  "Not",
  "Or",
  "Pow",
  "PRelu",
  "Reciprocal",
  "Relu",
  "Round",
  "Selu",
  "Sigmoid",
  "Sign",
  "Softplus",
  "Softsign",
  "Sqrt",
  "Sub",
  "Sum",
  "Tanh",
  "Where",
  "Xor",
  // Constants of the graph itself.
  "Constant",
  // Linear algebra, convolution, pooling and normalization (their cost grows with the shapes: the probe measures it).
  "AveragePool",
  "Conv",
  "ConvTranspose",
  "GlobalAveragePool",
  "GlobalMaxPool",
  "MaxPool",
  "BatchNormalization",
  "Gemm",
  "InstanceNormalization",
  "LayerNormalization",
  "MatMul",
  // Reductions and arg-reductions (axes select, never grow).
  "ArgMax",
  "ArgMin",
  "LogSoftmax",
  "ReduceL1",
  "ReduceL2",
  "ReduceLogSumExp",
  "ReduceMax",
  "ReduceMean",
  "ReduceMin",
  "ReduceProd",
  "ReduceSum",
  "ReduceSumSquare",
  "Softmax",
  // Layout: the same elements moved, or fewer (a slice, a gather of given indices).
  "Concat",
  "DepthToSpace",
  "Flatten",
  "Gather",
  "GatherElements",
  "Reshape",
  "Shape",
  "Size",
  "Slice",
  "SpaceToDepth",
  "Split",
  "Squeeze",
  "Transpose",
  "Unsqueeze",
]);

/** Why a model is not a candidate for the event loop, or undefined when it is (checked again by the probe). */
export async function inlineCandidacy(
  backend: string,
  modelPath: string,
  placement: InstancePlacement,
): Promise<string | undefined> {
  if (backend !== "onnxruntime") return `backend '${backend}' (only ONNX Runtime models run inline unasked)`;
  if (placement.kind !== "KIND_CPU") return `the instance is ${placement.kind}`;
  let size: number;
  try {
    size = (await stat(modelPath)).size;
  } catch {
    return `its model file ${modelPath} cannot be read`;
  }
  if (size > INLINE_MAX_MODEL_BYTES) return `its model file is ${size} bytes (over ${INLINE_MAX_MODEL_BYTES})`;
  let operators: string[];
  try {
    operators = await readOnnxOperatorsFile(modelPath);
  } catch (error) {
    return `its graph cannot be read (${(error as Error).message})`;
  }
  const unbounded = operators.filter((operator) => !SHAPE_BOUND_OPERATORS.has(operator));
  if (unbounded.length > 0)
    return `its graph has operators whose cost the shapes do not bound: ${unbounded.join(", ")}`;
  return undefined;
}

/**
 * The largest request the model can be sent, as zeros: max_batch_size rows (or the shapes as declared when the
 * model does not batch). A string says why there is no such request (a dynamic dimension, a BYTES input).
 */
export function probeInputs(inputs: readonly IoInfo[], maxBatchSize: number): Tensor[] | string {
  const tensors: Tensor[] = [];
  let bytes = 0;
  for (const input of inputs) {
    if (input.datatype === undefined) return `input '${input.name}' is not a tensor`;
    const elementBytes = elementByteSize(input.datatype);
    if (elementBytes === undefined) return `input '${input.name}' is ${input.datatype} (of variable size)`;
    const shape = input.shape.map((dim, axis) => (axis === 0 && maxBatchSize > 0 && dim < 0 ? maxBatchSize : dim));
    const dynamic = shape.findIndex((dim) => dim < 0);
    if (dynamic >= 0) return `input '${input.name}' has a dynamic dimension (axis ${dynamic})`;
    const elements = shape.reduce((count, dim) => count * dim, 1);
    bytes += elements * elementBytes;
    if (bytes > INLINE_MAX_BATCH_BYTES)
      return `its largest request holds over ${INLINE_MAX_BATCH_BYTES} bytes of inputs`;
    tensors.push({ name: input.name, datatype: input.datatype, shape, data: Buffer.alloc(elements * elementBytes) });
  }
  return tensors;
}

/**
 * The lower quartile, the median and the slowest of `timed` runs of `inputs` (ns of the event loop held,
 * loop-hold-clock.ts), after `warm` untimed ones. Between runs the event
 * loop turns (the probe of an inline instance must not hold it for all its runs), and a run over `abortNs`
 * ends the probe at once (`aborted`: a model that slow is no candidate, and more runs would only hold the loop
 * longer); the first run, which pays for lazy allocations, may take 10 times that.
 */
export async function measureExecutions(
  instance: Pick<BackendInstance, "execute">,
  inputs: Tensor[],
  options: { warm?: number; timed?: number; abortNs?: number } = {},
): Promise<{ lowerQuartileNs: number; medianNs: number; maxNs: number; aborted: boolean }> {
  const { warm = 10, timed = 20, abortNs = Number.POSITIVE_INFINITY } = options;
  const times: number[] = [];
  for (let run = 0; run < warm + timed; run += 1) {
    if (run > 0) await new Promise((resolve) => setImmediate(resolve));
    const held = startLoopHoldClock();
    await instance.execute(inputs);
    const ns = held();
    if (ns > (run === 0 ? 10 * abortNs : abortNs))
      return { lowerQuartileNs: ns, medianNs: ns, maxNs: ns, aborted: true };
    if (run >= warm) times.push(ns);
  }
  times.sort((a, b) => a - b);
  const at = (fraction: number): number => times[Math.floor(times.length * fraction)]!;
  return { lowerQuartileNs: at(0.25), medianNs: at(0.5), maxNs: times.at(-1)!, aborted: false };
}
