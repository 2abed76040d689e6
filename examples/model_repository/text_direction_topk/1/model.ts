/**
 * text_direction_topk: class probabilities -> the k best classes (see
 * ../config.pbtxt).
 *
 * initialize() reads `labels.txt` from the model's folder (one label per
 * line, in class order; blank lines are skipped) and the config parameter
 * `k` (default 1), and checks them against the config: the input's last
 * dimension must be the number of labels, 1 <= k <= that number, and
 * fixed output dims must be [k].
 *
 * Each request's `probabilities` is an FP32 [batch, classes] tensor; the
 * answer has, per row, `label` (BYTES) and `score` (FP32), both
 * [batch, k], best first (ties: the lower class index first; NaN ranks
 * last).
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import type { ExecuteContext, InitializeArgs, TypedRequest, TypedResponse } from "@operon/backend-api/typescript-model-api";

interface ConfigTensor {
  name?: string;
  dims?: Array<number | string>;
}

export default class TopK {
  private labels: string[] = [];
  private k = 1;

  initialize(args: InitializeArgs): void {
    const file = path.join(args.modelDir, "labels.txt");
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch (error) {
      throw new Error(`cannot read the labels file '${file}': ${(error as Error).message}`);
    }
    this.labels = text
      .split(/\r?\n/)
      .map((line) => line.trim())
      .filter((line) => line !== "");
    if (this.labels.length === 0) throw new Error(`the labels file '${file}' has no labels`);

    const raw = args.parameters.k ?? "1";
    const k = Number(raw);
    if (!Number.isSafeInteger(k) || k < 1 || k > this.labels.length) {
      throw new Error(`parameter 'k' must be an integer from 1 to ${this.labels.length} (the number of labels), got '${raw}'`);
    }
    this.k = k;

    const config = args.config as { input?: ConfigTensor[]; output?: ConfigTensor[] };
    const classes = lastDim(config.input?.find((input) => input.name === "probabilities"));
    if (classes !== undefined && classes !== -1 && classes !== this.labels.length) {
      throw new Error(`input 'probabilities' has ${classes} classes but '${file}' has ${this.labels.length} labels`);
    }
    for (const output of config.output ?? []) {
      const dim = lastDim(output);
      if (dim !== undefined && dim !== -1 && dim !== k) {
        throw new Error(`output '${output.name}' has dims [${(output.dims ?? []).join(", ")}] but k is ${k}: give it dims [ ${k} ] or [ -1 ]`);
      }
    }
  }

  execute(requests: TypedRequest[], ctx: ExecuteContext): Array<TypedResponse | Error> {
    return requests.map((request): TypedResponse | Error => {
      const input = request.input("probabilities");
      if (input.datatype !== "FP32") return ctx.error("INVALID_ARG", `input 'probabilities' must be FP32, got ${input.datatype}`);
      const classes = input.shape[input.shape.length - 1] ?? 0;
      if (classes !== this.labels.length) {
        return ctx.error("INVALID_ARG", `input 'probabilities' has ${classes} classes per row (shape [${input.shape.join(",")}]); the labels are ${this.labels.length}`);
      }
      const values = input.toFloat32Array();
      const rows = values.length / classes;
      const labels: string[] = [];
      const scores: number[] = [];
      for (let row = 0; row < rows; row += 1) {
        const scoreOf = (index: number): number => {
          const value = values[row * classes + index]!;
          return Number.isNaN(value) ? -Infinity : value;
        };
        const best = Array.from({ length: classes }, (_, index) => index)
          .sort((a, b) => scoreOf(b) - scoreOf(a) || a - b)
          .slice(0, this.k);
        for (const index of best) {
          labels.push(this.labels[index]!);
          scores.push(values[row * classes + index]!);
        }
      }
      const shape = [...input.shape.slice(0, -1), this.k];
      return { outputs: [ctx.tensor.bytes("label", shape, labels), ctx.tensor.float32("score", shape, scores)] };
    });
  }
}

function lastDim(tensor: ConfigTensor | undefined): number | undefined {
  const dims = tensor?.dims;
  if (dims === undefined || dims.length === 0) return undefined;
  return Number(dims[dims.length - 1]);
}
