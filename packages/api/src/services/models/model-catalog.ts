import type { ModelConfigJson } from "@operon/model-config/model-config-types";
import { writePbtxt } from "@operon/model-config/pbtxt-writer";
import { fromConfigDataType } from "@operon/protocol/datatypes";
import type { ModelStatistics } from "@operon/protocol/inference";
import {
  DB_MODEL_INCLUDE,
  modelState,
  UPLOADED,
  versionState,
  type DbModel,
  type GatewayView,
} from "./model-gateway-view.js";
import type {
  ModelDetail,
  ModelSummary,
  ModelVersionSummary,
  StatisticsSummary,
  TensorMetadata,
} from "./model-types.js";
import type { ModelWorkspace } from "./model-workspace.js";
import { specModels } from "@operon/operator-spec/spec-summary";
import { isShadowModelName } from "../config-search/candidate-config.js";

/** Reading: the models list and one model's detail, from the database, the store and the gateway. */
export class ModelCatalog {
  constructor(private readonly ws: ModelWorkspace) {}

  async list(): Promise<{ models: ModelSummary[]; gatewayError: string | null }> {
    const [dbModels, view, operators] = await Promise.all([
      this.ws.prisma.model.findMany({ where: UPLOADED, include: DB_MODEL_INCLUDE, orderBy: { name: "asc" } }),
      this.ws.gatewayView(),
      this.operatorIndex(),
    ]);
    const uploaded = new Set(dbModels.map((model) => model.name));
    const repository = [...view.rows.keys()].filter(
      (name) => !uploaded.has(name) && !isShadowModelName(name) && this.ws.isRepositoryModel(name, view),
    );
    const ready = [...uploaded, ...repository].filter((name) => modelState(view, name).state === "READY");
    const [configs, statistics] = await Promise.all([
      Promise.all(
        ready.map(async (name) => [name, await this.ws.gateway.modelConfig(name).catch(() => undefined)] as const),
      ),
      view.error === null
        ? this.ws.gateway.statistics().catch(() => [] as ModelStatistics[])
        : Promise.resolve([] as ModelStatistics[]),
    ]);
    const configOf = new Map(configs);
    const models = [
      ...dbModels.map((model) => this.summarize(model.name, model, view, configOf.get(model.name), statistics)),
      ...repository.map((name) => this.summarize(name, null, view, configOf.get(name), statistics)),
    ]
      .map((summary) => withOperators(summary, operators))
      .sort((a, b) => a.name.localeCompare(b.name));
    return { models, gatewayError: view.error };
  }

  async get(name: string): Promise<ModelDetail> {
    const [model, view] = await Promise.all([
      this.ws.prisma.model.findFirst({ where: { name, ...UPLOADED }, include: DB_MODEL_INCLUDE }),
      this.ws.gatewayView(),
    ]);
    if (model === null) this.ws.assertRepositoryModel(name, view);
    const loaded = modelState(view, name).state === "READY";
    const [gatewayConfig, metadata, statistics] = loaded
      ? await Promise.all([
          this.ws.gateway.modelConfig(name).catch(() => undefined),
          this.ws.gateway.modelMetadata(name).catch(() => undefined),
          this.ws.gateway.statistics(name).catch(() => [] as ModelStatistics[]),
        ])
      : [undefined, undefined, [] as ModelStatistics[]];
    const summary = withOperators(
      this.summarize(name, model, view, gatewayConfig, statistics),
      await this.operatorIndex(),
    );
    const stored = gatewayConfig === undefined && model !== null ? await this.ws.storedConfig(model) : undefined;
    const config = (gatewayConfig as ModelConfigJson | undefined) ?? stored ?? null;
    const io =
      metadata !== undefined
        ? tensorsOfMetadata(metadata)
        : config !== null
          ? tensorsOfConfig(config)
          : { inputs: [], outputs: [] };
    return {
      ...summary,
      config,
      configPbtxt: await this.configPbtxt(name, model, config),
      configSource: gatewayConfig !== undefined ? "gateway" : stored !== undefined ? "stored" : null,
      ...io,
      statistics: loaded ? summarizeStatistics(statistics) : null,
    };
  }

  /**
   * The config as Triton users read it (issue 27, item 9): an upload's config.pbtxt as stored (what was written,
   * without the defaults the gateway fills in), else the config written as protobuf text.
   */
  private async configPbtxt(
    name: string,
    model: DbModel | null,
    config: ModelConfigJson | null,
  ): Promise<string | null> {
    if (model !== null) {
      const text = await this.ws.options.store.readConfigText(name).catch(() => undefined);
      if (text !== undefined) return text;
    }
    if (config === null) return null;
    try {
      return writePbtxt(config, `${name}/config.pbtxt`);
    } catch {
      // A config the writer's schema does not know (a newer Triton field): the JSON view still shows it.
      return null;
    }
  }

  /** Operators registered through the API (stored in the database): their names, and who uses which model. */
  private async operatorIndex(): Promise<OperatorIndex> {
    const rows = await this.ws.prisma.operator.findMany({
      select: { name: true, spec: true },
      orderBy: { name: "asc" },
    });
    const usersOf = new Map<string, string[]>();
    for (const row of rows) {
      for (const model of new Set(specModels(row.spec))) usersOf.set(model, [...(usersOf.get(model) ?? []), row.name]);
    }
    return { names: new Set(rows.map((row) => row.name)), usersOf };
  }

  private summarize(
    name: string,
    model: DbModel | null,
    view: GatewayView,
    config: Record<string, unknown> | undefined,
    statistics: ModelStatistics[],
  ): ModelSummary {
    const state = modelState(view, name);
    const served = state.state === "READY" ? (config as ModelConfigJson | undefined) : undefined;
    const gatewayVersions = (view.rows.get(name) ?? [])
      .filter((row) => row.version !== undefined)
      .map((row) => Number(row.version));
    const versions: ModelVersionSummary[] =
      model !== null
        ? model.versions.map((row) => ({
            version: row.version,
            ...versionState(view, name, row.version),
            sizeBytes: Number(row.sizeBytes),
            sha256: row.sha256,
            uploadedBy: row.uploadedBy?.email ?? null,
            createdAt: row.createdAt,
          }))
        : [...new Set(gatewayVersions)]
            .sort((a, b) => a - b)
            .map((version) => ({
              version,
              ...versionState(view, name, version),
              sizeBytes: null,
              sha256: null,
              uploadedBy: null,
              createdAt: null,
            }));
    return {
      name,
      description: model?.description ?? null,
      source: model !== null ? "uploaded" : "repository",
      platform: served?.platform || model?.platform || null,
      backend: served?.backend || (model !== null ? "onnxruntime" : null),
      ...state,
      versions,
      usedBy: [],
      instanceCount:
        served === undefined ? 0 : (served.instance_group ?? []).reduce((sum, group) => sum + (group.count ?? 1), 0),
      inferenceCount: statistics
        .filter((stat) => stat.name === name)
        .reduce((sum, stat) => sum + stat.inference_count, 0),
    };
  }
}

interface OperatorIndex {
  names: ReadonlySet<string>;
  usersOf: ReadonlyMap<string, string[]>;
}

/**
 * The gateway lists registered operators beside its models: they are operators, not repository folders, and a
 * model says which operators call it (issue 27, item 4: one state everywhere).
 */
function withOperators<T extends ModelSummary>(summary: T, operators: OperatorIndex): T {
  return {
    ...summary,
    ...(summary.source === "repository" && operators.names.has(summary.name) ? { source: "operator" as const } : {}),
    usedBy: operators.usersOf.get(summary.name) ?? [],
  };
}

function tensorsOfMetadata(metadata: Record<string, unknown>): { inputs: TensorMetadata[]; outputs: TensorMetadata[] } {
  const read = (list: unknown): TensorMetadata[] =>
    Array.isArray(list)
      ? list.map((tensor: { name?: string; datatype?: string; shape?: number[] }) => ({
          name: tensor.name ?? "",
          datatype: tensor.datatype ?? null,
          shape: tensor.shape ?? [],
        }))
      : [];
  return { inputs: read(metadata["inputs"]), outputs: read(metadata["outputs"]) };
}

/** The gateway's metadata view of a config (batch dimension -1 first when the model batches). */
function tensorsOfConfig(config: ModelConfigJson): { inputs: TensorMetadata[]; outputs: TensorMetadata[] } {
  const batching = (config.max_batch_size ?? 0) > 0;
  const read = (list: Array<{ name: string; data_type?: string; dims?: number[] }> | undefined): TensorMetadata[] =>
    (list ?? []).map((tensor) => ({
      name: tensor.name,
      datatype: fromConfigDataType(tensor.data_type ?? "TYPE_INVALID") ?? null,
      shape: batching ? [-1, ...(tensor.dims ?? [])] : [...(tensor.dims ?? [])],
    }));
  return { inputs: read(config.input), outputs: read(config.output) };
}

function summarizeStatistics(statistics: ModelStatistics[]): StatisticsSummary {
  const sum = (pick: (stat: ModelStatistics) => number): number =>
    statistics.reduce((total, stat) => total + pick(stat), 0);
  const mean = (ns: number, count: number): number | null => (count > 0 ? Math.round(ns / count / 1e3) / 1e3 : null);
  const executions = sum((stat) => stat.execution_count);
  const successCount = sum((stat) => stat.inference_stats.success.count);
  const last = Math.max(0, ...statistics.map((stat) => stat.last_inference));
  return {
    inferenceCount: sum((stat) => stat.inference_count),
    executionCount: executions,
    successCount,
    failureCount: sum((stat) => stat.inference_stats.fail.count),
    averageLatencyMs: mean(
      sum((stat) => stat.inference_stats.success.ns),
      successCount,
    ),
    averageQueueMs: mean(
      sum((stat) => stat.inference_stats.queue.ns),
      sum((stat) => stat.inference_stats.queue.count),
    ),
    averageComputeMs: mean(
      sum(
        (stat) =>
          stat.inference_stats.compute_input.ns +
          stat.inference_stats.compute_infer.ns +
          stat.inference_stats.compute_output.ns,
      ),
      sum((stat) => stat.inference_stats.compute_infer.count),
    ),
    lastInferenceAt: last > 0 ? new Date(last) : null,
  };
}
