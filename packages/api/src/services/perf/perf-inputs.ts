import { Prisma, type PerfTargetKind, type PrismaClient } from "@operon/db";
import { elementByteSize, elementCount, type DataType } from "@operon/protocol/datatypes";
import type { TensorMetadata } from "@operon/protocol/inference";
import { type InputSpec, prepareInputSets, resolveInputSpecs } from "@operon/perf/input-data";
import { messageOf, PerfError } from "@operon/perf/perf-error";
import type { PerfOptions } from "@operon/perf/run-perf";
import { hasVariableDims, suggestDims } from "@operon/perf/suggested-dims";
import { AppError } from "../../app-error.js";
import { recordAudit, type Actor } from "../audit/audit-log.js";
import type { GatewayClient } from "../gateway/gateway-client.js";

/**
 * How perf runs fill a target's inputs: perf_analyzer's --shape (sizes for
 * variable dims) and --input-data (zero, random, or a data file), kept per
 * model or operator so that every run of it — manual, automatic, a config
 * search's — measures the same requests. Without a saved row, variable dims
 * get suggested sizes (suggested-dims.ts) and data is random: a model that
 * declares `x [3,48,-1]` is measured at once, and its owner can change what
 * was chosen. A BYTES input that expects an encoded image needs a sample:
 * the console turns an uploaded file into a data file (`{"b64": ...}`).
 *
 * Bounds (the control plane holds each request's bytes in memory while a run
 * goes, and the API's body limit is 8 MiB): a data file's JSON is at most
 * MAX_SAMPLE_BYTES, and one request's tensors at most MAX_REQUEST_BYTES.
 */
export const PERF_INPUT_LIMITS = {
  maxSampleBytes: 4 * 1024 * 1024,
  maxRequestBytes: 16 * 1024 * 1024,
  maxEntries: 64,
} as const;

export type PerfDataKind = "random" | "zero" | "file";

export interface PerfTarget {
  kind: PerfTargetKind;
  name: string;
}

export interface PerfInputView {
  name: string;
  datatype: string;
  /** The shape the model declares, batch dimension included when it batches (-1 = variable). */
  shape: number[];
  batched: boolean;
  /** True when some dim (batch excluded) is variable: the run needs a size for it. */
  variable: boolean;
  /** The dims (batch excluded) runs use: saved, else suggested, else the model's own. */
  dims: number[];
  /** True when `dims` is the suggestion, not a saved choice. */
  suggested: boolean;
}

export interface PerfInputsView {
  target: PerfTarget;
  maxBatchSize: number;
  inputs: PerfInputView[];
  data: { kind: PerfDataKind; name: string | null; bytes: number; entries: number };
  /** When its owner saved it; null while runs use the defaults. */
  updatedAt: string | null;
}

export interface PerfInputsUpdate {
  /** Dims (batch excluded) by input name, for inputs with variable dims; others are refused. */
  shapes: Record<string, number[]>;
  /** `keep`: the data file saved before stays (only the shapes change). */
  data: { kind: "random" | "zero" | "keep" } | { kind: "file"; name: string; json: string };
}

type RunInputOptions = Pick<PerfOptions, "shapes" | "inputData" | "inputDataFile" | "fillVariableDims">;

export class PerfInputsStore {
  constructor(
    private readonly prisma: PrismaClient,
    private readonly gateway: GatewayClient,
  ) {}

  /** The target's inputs as runs fill them. NOT_FOUND when the gateway does not serve it. */
  async view(target: PerfTarget): Promise<PerfInputsView> {
    const { inputs, maxBatchSize } = await this.signature(target);
    const row = await this.prisma.perfInputs.findUnique({ where: { targetKind_targetName: keyOf(target) } });
    const saved = shapesOf(row?.shapes);
    const data = dataOf(row);
    return {
      target,
      maxBatchSize,
      inputs: inputs.map((input) => {
        const batched = maxBatchSize > 0;
        const dims = batched ? input.shape.slice(1) : [...input.shape];
        const variable = hasVariableDims(dims);
        const mine = saved[input.name];
        const usable = mine !== undefined && mine.length === dims.length;
        return {
          name: input.name,
          datatype: input.datatype,
          shape: [...input.shape],
          batched,
          variable,
          dims: usable ? [...mine] : variable ? suggestDims(dims) : dims,
          suggested: variable && !usable,
        };
      }),
      data: {
        kind: data.kind,
        name: data.name,
        bytes: row?.dataBytes ?? 0,
        entries: data.kind === "file" ? entriesOf(data.json) : 0,
      },
      updatedAt: row?.updatedAt.toISOString() ?? null,
    };
  }

  /**
   * Saves how runs fill the target's inputs, after building one request from
   * it against the model's signature as a run would: a shape that does not
   * fit, or a data file that names no input or the wrong number of values,
   * is refused here (with the input named), not at the next run. Audited.
   */
  async update(actor: Actor, target: PerfTarget, update: PerfInputsUpdate): Promise<PerfInputsView> {
    const { inputs, maxBatchSize } = await this.signature(target);
    let json: unknown = null;
    if (update.data.kind === "keep") {
      const row = await this.prisma.perfInputs.findUnique({ where: { targetKind_targetName: keyOf(target) } });
      if (row === null || row.dataKind !== "file" || row.data === null)
        throw invalid("data", "there is no saved data file to keep; choose random, zero or a file");
      update = {
        ...update,
        data: { kind: "file", name: row.dataName ?? "data file", json: JSON.stringify(row.data) },
      };
    }
    if (update.data.kind === "file") {
      const bytes = Buffer.byteLength(update.data.json, "utf8");
      if (bytes > PERF_INPUT_LIMITS.maxSampleBytes) {
        throw new AppError(
          "PAYLOAD_TOO_LARGE",
          `the data file is ${bytes} bytes; at most ${PERF_INPUT_LIMITS.maxSampleBytes} (${PERF_INPUT_LIMITS.maxSampleBytes / 1024 / 1024} MiB)`,
          { fieldErrors: [{ path: "data", message: "too large" }] },
        );
      }
      try {
        json = JSON.parse(update.data.json) as unknown;
      } catch (error) {
        throw invalid("data", `the data file '${update.data.name}' is not JSON: ${messageOf(error)}`, error);
      }
      const entries = entriesOf(json);
      if (entries > PERF_INPUT_LIMITS.maxEntries)
        throw invalid("data", `the data file has ${entries} entries; at most ${PERF_INPUT_LIMITS.maxEntries}`);
    }
    const variableNames = new Set(
      inputs
        .filter((input) => hasVariableDims(maxBatchSize > 0 ? input.shape.slice(1) : input.shape))
        .map((input) => input.name),
    );
    for (const name of Object.keys(update.shapes)) {
      if (!variableNames.has(name)) {
        const known = inputs.some((input) => input.name === name);
        throw invalid(
          `shapes.${name}`,
          known
            ? `input '${name}' has no variable dims: its shape is fixed by the model`
            : `the model has no input '${name}' (inputs: ${inputs.map((input) => input.name).join(", ")})`,
        );
      }
    }
    const dataKind = update.data.kind === "keep" ? "file" : update.data.kind;
    const options = runOptions(update.shapes, dataKind, update.data.kind === "file" ? update.data.name : null, json);
    checkRequests(inputs, maxBatchSize, options);
    const data = update.data as { kind: "random" | "zero" } | { kind: "file"; name: string; json: string };
    const row = {
      shapes: update.shapes as Prisma.InputJsonObject,
      dataKind: data.kind,
      data: data.kind === "file" ? (json as Prisma.InputJsonValue) : Prisma.DbNull,
      dataName: data.kind === "file" ? data.name : null,
      dataBytes: data.kind === "file" ? Buffer.byteLength(data.json, "utf8") : 0,
      updatedById: actor.userId,
    };
    await this.prisma.$transaction(async (tx) => {
      await tx.perfInputs.upsert({
        where: { targetKind_targetName: keyOf(target) },
        create: { ...keyOf(target), ...row },
        update: row,
      });
      await recordAudit(tx, actor, {
        action: "perf.inputs",
        targetType: target.kind === "MODEL" ? "Model" : "Operator",
        targetId: target.name,
        after: { shapes: update.shapes, data: data.kind, dataName: row.dataName, dataBytes: row.dataBytes },
      });
    });
    return this.view(target);
  }

  /** What runPerf needs to fill the target's inputs: the saved choice, else suggested sizes and random data. */
  async optionsFor(target: PerfTarget): Promise<RunInputOptions> {
    const row = await this.prisma.perfInputs.findUnique({ where: { targetKind_targetName: keyOf(target) } });
    const data = dataOf(row);
    return runOptions(shapesOf(row?.shapes), data.kind, data.name, data.json);
  }

  /** The target was deleted: its inputs go with it (a new model of that name starts from the defaults). */
  async remove(target: PerfTarget): Promise<void> {
    await this.prisma.perfInputs.deleteMany({ where: { targetKind: target.kind, targetName: target.name } });
  }

  private async signature(target: PerfTarget): Promise<{ inputs: TensorMetadata[]; maxBatchSize: number }> {
    try {
      const metadata = await this.gateway.modelMetadata(target.name);
      const config = await this.gateway.modelConfig(target.name);
      const inputs = Array.isArray(metadata["inputs"]) ? (metadata["inputs"] as TensorMetadata[]) : [];
      return { inputs, maxBatchSize: Number(config["max_batch_size"] ?? 0) || 0 };
    } catch (error) {
      if (error instanceof AppError && error.code === "NOT_FOUND") {
        throw new AppError(
          "NOT_FOUND",
          `${target.kind === "MODEL" ? "model" : "operator"} '${target.name}' is not served by the gateway; load it first`,
          { cause: error },
        );
      }
      throw error;
    }
  }
}

function runOptions(
  shapes: Record<string, number[]>,
  kind: PerfDataKind,
  name: string | null,
  json: unknown,
): RunInputOptions {
  return {
    shapes,
    fillVariableDims: true,
    ...(kind === "file" ? { inputDataFile: { name: name ?? "data file", json } } : { inputData: kind }),
  };
}

/** Builds the requests a run would send (batch size 1) and checks their size; PerfError -> VALIDATION_FAILED. */
function checkRequests(inputs: readonly TensorMetadata[], maxBatchSize: number, options: RunInputOptions): void {
  let specs: InputSpec[];
  try {
    specs = resolveInputSpecs(inputs, {
      maxBatchSize,
      batchSize: 1,
      shapes: options.shapes ?? {},
      fillVariableDims: true,
    });
    // Tensor bytes before they are allocated: a shape of [100000, 100000] must not take the control plane's memory.
    for (const spec of specs) {
      const size = elementByteSize(spec.datatype as DataType) ?? 1;
      const bytes = elementCount(spec.dims) * size * Math.max(1, maxBatchSize);
      if (bytes > PERF_INPUT_LIMITS.maxRequestBytes) {
        throw invalid(
          `shapes.${spec.name}`,
          `input '${spec.name}' of shape [${spec.dims.join(",")}] would take ${bytes} bytes per request at max_batch_size ${Math.max(1, maxBatchSize)}; at most ${PERF_INPUT_LIMITS.maxRequestBytes}`,
        );
      }
    }
    const source =
      options.inputDataFile !== undefined
        ? { kind: "file" as const, path: options.inputDataFile.name, json: options.inputDataFile.json }
        : { kind: (options.inputData ?? "random") as "random" | "zero" };
    prepareInputSets(specs, 1, source);
  } catch (error) {
    if (!(error instanceof PerfError)) throw error;
    const input = /input '([^']+)'|--shape ([^:\s]+)|data\[\d+\]\.([^\s:]+)/.exec(error.message);
    const field = input?.[1] ?? input?.[2] ?? input?.[3];
    throw invalid(
      options.inputDataFile !== undefined && /--input-data/.test(error.message)
        ? "data"
        : field
          ? `shapes.${field}`
          : "shapes",
      error.message.replace(/--input-data [^:]+: /, "the data file: "),
      error,
    );
  }
}

function keyOf(target: PerfTarget): { targetKind: PerfTargetKind; targetName: string } {
  return { targetKind: target.kind, targetName: target.name };
}

function shapesOf(value: unknown): Record<string, number[]> {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return {};
  const out: Record<string, number[]> = {};
  for (const [name, dims] of Object.entries(value as Record<string, unknown>)) {
    if (Array.isArray(dims) && dims.every((dim) => Number.isSafeInteger(dim) && (dim as number) >= 0))
      out[name] = dims as number[];
  }
  return out;
}

function dataOf(row: { dataKind: string; dataName: string | null; data: unknown } | null): {
  kind: PerfDataKind;
  name: string | null;
  json: unknown;
} {
  if (row === null) return { kind: "random", name: null, json: null };
  const kind: PerfDataKind = row.dataKind === "zero" || row.dataKind === "file" ? row.dataKind : "random";
  return { kind, name: kind === "file" ? row.dataName : null, json: kind === "file" ? row.data : null };
}

function entriesOf(json: unknown): number {
  const data = json !== null && typeof json === "object" ? (json as { data?: unknown }).data : undefined;
  return Array.isArray(data) ? data.length : 0;
}

function invalid(path: string, message: string, cause?: unknown): AppError {
  return new AppError("VALIDATION_FAILED", message, {
    fieldErrors: [{ path, message }],
    ...(cause !== undefined ? { cause } : {}),
  });
}
