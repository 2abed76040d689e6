import {
  describeShape,
  elementCount,
  expectTensor,
  fromNumbers,
  isNumeric,
  type NumericArray,
  type NumericDataType,
  type StepFactory,
  StepInputError,
  type StepRun,
  type StepTensor,
  stepInput,
  toNumbers,
} from "./step-tensor.js";

/** Tensor steps: reductions along an axis, top-k with labels, threshold, cast, reshape, concat and split. */

/** The axis as a non-negative index, and the sizes before it, along it and after it. */
function axisOf(
  shape: readonly number[],
  axis: number,
  where: string,
): { outer: number; n: number; inner: number; index: number } {
  const rank = shape.length;
  const index = axis < 0 ? rank + axis : axis;
  if (rank === 0 || index < 0 || index >= rank) {
    throw new StepInputError(`axis ${axis} is out of range for ${where} of shape ${describeShape(shape)}`);
  }
  return {
    outer: elementCount(shape.slice(0, index)),
    n: shape[index]!,
    inner: elementCount(shape.slice(index + 1)),
    index,
  };
}

const numericInput = (
  inputs: Readonly<Record<string, StepTensor>>,
  name: string,
): StepTensor & { data: NumericArray } => {
  const tensor = stepInput(inputs, name);
  if (!isNumeric(tensor)) throw new StepInputError(`input '${name}' must be numeric, got BYTES`);
  return tensor;
};

const softmax: StepFactory = (params: { axis: number }): StepRun => {
  return async (inputs) => {
    const x = numericInput(inputs, "x");
    const values = toNumbers(x, "input 'x'");
    const { outer, n, inner } = axisOf(x.shape, params.axis, "input 'x'");
    const out = new Float32Array(values.length);
    // Each exp once, kept in double precision for the division (the same values as computing it twice).
    const exps = new Float64Array(n);
    for (let o = 0; o < outer; o += 1) {
      for (let i = 0; i < inner; i += 1) {
        const base = o * n * inner + i;
        let max = -Infinity;
        for (let k = 0, at = base; k < n; k += 1, at += inner) max = Math.max(max, values[at]!);
        let sum = 0;
        for (let k = 0, at = base; k < n; k += 1, at += inner) {
          exps[k] = Math.exp(values[at]! - max);
          sum += exps[k]!;
        }
        for (let k = 0, at = base; k < n; k += 1, at += inner) out[at] = exps[k]! / sum;
      }
    }
    return { y: { datatype: "FP32", shape: [...x.shape], data: out } };
  };
};

const argmax: StepFactory = (params: { axis: number }): StepRun => {
  return async (inputs) => {
    const x = numericInput(inputs, "x");
    const values = toNumbers(x, "input 'x'");
    const { outer, n, inner, index } = axisOf(x.shape, params.axis, "input 'x'");
    if (n === 0) throw new StepInputError(`input 'x' has no elements along axis ${params.axis}`);
    const out = new BigInt64Array(outer * inner);
    for (let o = 0; o < outer; o += 1) {
      for (let i = 0; i < inner; i += 1) {
        let best = 0;
        let bestValue = -Infinity;
        for (let k = 0; k < n; k += 1) {
          const raw = values[(o * n + k) * inner + i]!;
          const value = Number.isNaN(raw) ? -Infinity : raw;
          if (value > bestValue) {
            best = k;
            bestValue = value;
          }
        }
        out[o * inner + i] = BigInt(best);
      }
    }
    const shape = x.shape.filter((_, d) => d !== index);
    return { index: { datatype: "INT64", shape, data: out } };
  };
};

/**
 * The indices of the k best of values[offset .. offset + n), best first;
 * ties (and -Infinity / NaN, which counts as -Infinity, against each other)
 * keep the lower index first. One pass keeping the best k in order, O(n·k)
 * at worst and about n comparisons when few values beat the k-th (a full
 * sort of 32000 classes with a comparator took ~30 ms;
 * bench/numeric-steps-native.mjs); a full sort above k = 64, where
 * inserting costs more than sorting.
 */
export function bestIndices(values: Float64Array, offset: number, n: number, k: number): number[] {
  const score = (index: number): number => {
    const value = values[offset + index]!;
    return Number.isNaN(value) ? -Infinity : value;
  };
  if (k > 64) {
    return Array.from({ length: n }, (_, index) => index)
      .sort((a, b) => score(b) - score(a) || a - b)
      .slice(0, k);
  }
  const best: number[] = [];
  const bestScores: number[] = [];
  for (let index = 0; index < n; index += 1) {
    const value = score(index);
    // Indices come in increasing order, so an equal score never displaces one already kept.
    if (best.length === k && !(value > bestScores[k - 1]!)) continue;
    let at = best.length === k ? k - 1 : best.length;
    while (at > 0 && value > bestScores[at - 1]!) {
      best[at] = best[at - 1]!;
      bestScores[at] = bestScores[at - 1]!;
      at -= 1;
    }
    best[at] = index;
    bestScores[at] = value;
  }
  return best;
}

function parseLabels(text: string): string[] {
  return text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== "");
}

const topk: StepFactory = async (params: { k: number; labels?: string }, env): Promise<StepRun> => {
  let labels: string[] | undefined;
  if (params.labels !== undefined) {
    let text: string;
    try {
      text = (await env.readFile(params.labels)).toString("utf8");
    } catch (error) {
      throw new StepInputError(
        `params.labels: cannot read the labels file '${params.labels}': ${(error as Error).message}`,
      );
    }
    labels = parseLabels(text);
    if (labels.length === 0)
      throw new StepInputError(`params.labels: the labels file '${params.labels}' has no labels`);
    if (params.k > labels.length) {
      throw new StepInputError(`params.k must be at most ${labels.length} (the number of labels), got ${params.k}`);
    }
  }
  return async (inputs) => {
    const x = numericInput(inputs, "x");
    if (x.shape.length === 0) throw new StepInputError("input 'x' must have at least one dimension (the classes)");
    const classes = x.shape[x.shape.length - 1]!;
    if (labels !== undefined && classes !== labels.length) {
      throw new StepInputError(
        `input 'x' has ${classes} classes (shape ${describeShape(x.shape)}) but the labels file '${params.labels}' has ${labels.length} labels`,
      );
    }
    if (params.k > classes)
      throw new StepInputError(`params.k is ${params.k} but input 'x' has only ${classes} classes`);
    const values = toNumbers(x, "input 'x'");
    const rows = classes === 0 ? 0 : values.length / classes;
    const scores = new Float32Array(rows * params.k);
    const indices = new BigInt64Array(rows * params.k);
    const names: Buffer[] = [];
    for (let row = 0; row < rows; row += 1) {
      const best = bestIndices(values, row * classes, classes, params.k);
      best.forEach((index, j) => {
        scores[row * params.k + j] = values[row * classes + index]!;
        indices[row * params.k + j] = BigInt(index);
        if (labels !== undefined) names.push(Buffer.from(labels[index]!, "utf8"));
      });
    }
    const shape = [...x.shape.slice(0, -1), params.k];
    return {
      ...(labels !== undefined ? { label: { datatype: "BYTES", shape, data: names } as StepTensor } : {}),
      score: { datatype: "FP32", shape, data: scores },
      index: { datatype: "INT64", shape: [...shape], data: indices },
    };
  };
};

const threshold: StepFactory = (params: { value: number; inclusive: boolean }): StepRun => {
  return async (inputs) => {
    const x = numericInput(inputs, "x");
    const values = toNumbers(x, "input 'x'");
    const out = new Uint8Array(values.length);
    for (let i = 0; i < values.length; i += 1) {
      const v = values[i]!;
      out[i] = (params.inclusive ? v >= params.value : v > params.value) ? 1 : 0;
    }
    return { y: { datatype: "BOOL", shape: [...x.shape], data: out } };
  };
};

const cast: StepFactory = (params: { to: NumericDataType }): StepRun => {
  return async (inputs) => {
    const x = numericInput(inputs, "x");
    return { y: { datatype: params.to, shape: [...x.shape], data: fromNumbers(params.to, toNumbers(x, "input 'x'")) } };
  };
};

const reshape: StepFactory = (params: { shape: number[] }): StepRun => {
  return async (inputs) => {
    const x = stepInput(inputs, "x");
    const count = elementCount(x.shape);
    const known = params.shape.filter((d) => d !== -1).reduce((a, b) => a * b, 1);
    const shape = [...params.shape];
    const free = shape.indexOf(-1);
    if (free >= 0) {
      if (known === 0 || count % known !== 0) {
        throw new StepInputError(
          `input 'x' of shape ${describeShape(x.shape)} (${count} elements) cannot be reshaped to ${describeShape(params.shape)}`,
        );
      }
      shape[free] = count / known;
    } else if (known !== count) {
      throw new StepInputError(
        `input 'x' of shape ${describeShape(x.shape)} has ${count} elements; shape ${describeShape(params.shape)} holds ${known}`,
      );
    }
    return { y: { datatype: x.datatype, shape, data: x.data } };
  };
};

const concat: StepFactory = (params: { count: number; axis: number }): StepRun => {
  return async (inputs) => {
    const parts = Array.from({ length: params.count }, (_, i) => numericInput(inputs, `x${i}`));
    const first = parts[0]!;
    const { index } = axisOf(first.shape, params.axis, "input 'x0'");
    parts.forEach((part, i) => {
      expectTensor(part, `input 'x${i}'`, [first.datatype]);
      const same =
        part.shape.length === first.shape.length &&
        part.shape.every((d, axis) => axis === index || d === first.shape[axis]);
      if (!same) {
        throw new StepInputError(
          `input 'x${i}' has shape ${describeShape(part.shape)}; it must match x0's ${describeShape(first.shape)} except along axis ${params.axis}`,
        );
      }
    });
    const outer = elementCount(first.shape.slice(0, index));
    const inner = elementCount(first.shape.slice(index + 1));
    const total = parts.reduce((sum, part) => sum + part.shape[index]!, 0);
    const out = new (first.data.constructor as new (n: number) => NumericArray)(outer * total * inner) as Uint8Array;
    let offset = 0;
    for (const part of parts) {
      const n = part.shape[index]!;
      const data = part.data as Uint8Array;
      for (let o = 0; o < outer; o += 1) {
        out.set(data.subarray(o * n * inner, (o + 1) * n * inner), (o * total + offset) * inner);
      }
      offset += n;
    }
    const shape = [...first.shape];
    shape[index] = total;
    return { y: { datatype: first.datatype, shape, data: out } };
  };
};

const split: StepFactory = (params: { sizes: number[]; axis: number }): StepRun => {
  return async (inputs) => {
    const x = numericInput(inputs, "x");
    const { outer, n, inner, index } = axisOf(x.shape, params.axis, "input 'x'");
    const total = params.sizes.reduce((a, b) => a + b, 0);
    if (total !== n) {
      throw new StepInputError(
        `params.sizes add up to ${total} but input 'x' has ${n} along axis ${params.axis} (shape ${describeShape(x.shape)})`,
      );
    }
    const outputs: Record<string, StepTensor> = {};
    let offset = 0;
    const data = x.data as Uint8Array;
    params.sizes.forEach((size, i) => {
      const out = new (x.data.constructor as new (n: number) => NumericArray)(outer * size * inner) as Uint8Array;
      for (let o = 0; o < outer; o += 1) {
        out.set(data.subarray((o * n + offset) * inner, (o * n + offset + size) * inner), o * size * inner);
      }
      const shape = [...x.shape];
      shape[index] = size;
      outputs[`y${i}`] = { datatype: x.datatype, shape, data: out };
      offset += size;
    });
    return outputs;
  };
};

export const TENSOR_STEPS: Record<string, StepFactory> = {
  "tensor.softmax": softmax,
  "tensor.argmax": argmax,
  "tensor.topk": topk,
  "tensor.threshold": threshold,
  "tensor.cast": cast,
  "tensor.reshape": reshape,
  "tensor.concat": concat,
  "tensor.split": split,
};
