import type { Prisma, PrismaClient } from "@operon/db";
import type { ModelIoMetadata } from "@operon/model-config/auto-complete";
import type { ModelConfigJson } from "@operon/model-config/model-config-types";
import { readOnnxSignatureFile } from "@operon/model-config/onnx-signature";
import { parsePbtxt } from "@operon/model-config/pbtxt-parser";
import type { Logger } from "@operon/protocol/logger";
import { AppError, notFound } from "../../app-error.js";
import { recordAudit, SYSTEM_ACTOR, type Actor } from "../audit/audit-log.js";
import type { HardwareProfileView } from "../costs/hardware-profiles.js";
import type { GatewayClient, GatewayClientOptions } from "../gateway/gateway-client.js";
import type { ModelConfigEdit } from "../models/model-config-edit.js";
import { MODEL_FILE_NAME, type ModelStore } from "../models/model-store.js";
import type { ModelActor, ModelStateResult } from "../models/model-types.js";
import { prepareConfig } from "../models/uploaded-model-config.js";
import type { PerfRuns } from "../perf/perf-runs.js";
import { canSearchBatching, configOf, shadowModelName } from "./candidate-config.js";
import { ConfigSearchExecution, type ActiveSearch } from "./config-search-execution.js";
import { planOf, type ConfigSearchInput } from "./config-search-plan.js";
import {
  ConfigSearchViews,
  candidateFromRow,
  type ConfigSearchCandidateView,
  type ConfigSearchView,
} from "./config-search-views.js";
import type { SearchObjective } from "./search-strategy.js";

export type { ConfigSearchInput, ConfigSearchPlan, MeasurementPlan, SweepStep } from "./config-search-plan.js";
export { DEFAULT_MEASUREMENT } from "./config-search-plan.js";
export type { ConfigSearchCandidateView, ConfigSearchView } from "./config-search-views.js";

/**
 * Config searches (what Triton's model analyzer does, inside the platform):
 * for one uploaded model, measure candidate configs chosen by the quick
 * search (search-strategy.ts), store every candidate, recommend the best
 * under the engineer's objective and p99 budget, and apply a candidate as
 * the model's config on request.
 *
 * Measuring: each candidate is loaded into the gateway as a shadow model
 * (`<model>.search-<id>`, candidate-config.ts) from the model store's files
 * with the candidate's config as the load's `config` override, so the live
 * model keeps serving its traffic with its own config; the shadow is
 * measured with the `operon perf` engine (runPerf) at a short concurrency
 * sweep (concurrency-sweep.ts). The shadow is unloaded when the search
 * ends however it ends (done, cancelled, failed, the control plane
 * stopping); one a crash left loaded is unloaded by recoverInterrupted().
 * The search holds the perf slot (PerfRuns.runExclusive) for its whole
 * run: a perf run and a search never measure at the same time. It still
 * shares the host with live traffic, which lowers its figures alike for
 * every candidate (the ranking is what counts).
 *
 * Life of a search: RUNNING -> SUCCEEDED (recommendedIndex set, or null
 * when no candidate met the budget) | CANCELLED | FAILED; candidates
 * measured before a cancel or failure are kept. A RUNNING search without a
 * run in this process was interrupted by a restart: recoverInterrupted()
 * marks it FAILED.
 */

export interface ConfigSearchesOptions {
  prisma: PrismaClient;
  gateway: GatewayClient;
  gatewayOptions: GatewayClientOptions;
  store: ModelStore;
  perfRuns: PerfRuns;
  configEdit: ModelConfigEdit;
  defaultProfile: () => Promise<HardwareProfileView | null>;
  logger: Logger;
}

export class ConfigSearches {
  private active: ActiveSearch | undefined;
  private stopped = false;
  /** True while start() validates and stores a search: a second start meanwhile is refused like one during a search. */
  private starting = false;
  private readonly execution: ConfigSearchExecution;
  private readonly views: ConfigSearchViews;

  constructor(private readonly options: ConfigSearchesOptions) {
    this.execution = new ConfigSearchExecution(options);
    this.views = new ConfigSearchViews(options.prisma, (id) => (this.active?.id === id ? this.active.measuring : null));
  }

  private get prisma(): PrismaClient {
    return this.options.prisma;
  }

  /**
   * Marks the RUNNING searches a crash left behind FAILED and unloads their
   * shadow models (best effort: a gateway that is not up has none loaded).
   */
  async recoverInterrupted(): Promise<number> {
    const orphans = await this.prisma.configSearch.findMany({
      where: { status: "RUNNING" },
      select: { id: true, modelName: true },
    });
    if (orphans.length === 0) return 0;
    const error = "interrupted by a restart";
    await this.prisma.$transaction(async (tx) => {
      await tx.configSearch.updateMany({
        where: { id: { in: orphans.map((orphan) => orphan.id) } },
        data: { status: "FAILED", error, finishedAt: new Date() },
      });
      for (const orphan of orphans) {
        await recordAudit(tx, SYSTEM_ACTOR, {
          action: "configSearch.fail",
          targetType: "ConfigSearch",
          targetId: orphan.id,
          after: { status: "FAILED", error },
        });
      }
    });
    for (const orphan of orphans) {
      await this.options.gateway
        .unloadModel(shadowModelName(orphan.modelName, orphan.id))
        .catch((unloadError: unknown) =>
          this.options.logger.info(
            { err: unloadError, search: orphan.id },
            "no shadow model of an interrupted config search to unload",
          ),
        );
    }
    return orphans.length;
  }

  /**
   * Checks the model (an upload, with files in the store), the objective
   * (the cost objective needs a default hardware profile) and the bounds,
   * stores a RUNNING search that waits its turn in the perf slot (CONFLICT while
   * another search goes; perf runs started meanwhile queue behind it) and
   * measures in the background: → { id }.
   */
  async start(actor: Actor, input: ConfigSearchInput): Promise<{ id: string }> {
    if (this.stopped)
      throw new AppError(
        "GATEWAY_UNAVAILABLE",
        "the control plane is stopping; start the search again once it is back",
      );
    // One search at a time (it holds the perf slot for minutes); perf runs queue behind it, and it queues behind them.
    if (this.active !== undefined || this.starting)
      throw new AppError(
        "CONFLICT",
        `the config search of '${this.active?.model ?? "another model"}' is going; wait for it or cancel it`,
      );
    this.starting = true;
    try {
      return await this.create(actor, input);
    } finally {
      this.starting = false;
    }
  }

  /** start() past its one-at-a-time check: validates, stores the search and sets it going. */
  private async create(actor: Actor, input: ConfigSearchInput): Promise<{ id: string }> {
    const plan = planOf(input);
    const model = await this.prisma.model.findFirst({
      where: { name: input.model, versions: { some: {} } },
      select: { id: true, name: true },
    });
    if (model === null || !(await this.options.store.hasModel(input.model))) {
      throw new AppError(
        "NOT_FOUND",
        `model '${input.model}' is not an uploaded model; the config search tunes uploads (a repository model's config is its folder's)`,
        {
          fieldErrors: [{ path: "model", message: "not an uploaded model" }],
        },
      );
    }
    const profile = await this.options.defaultProfile();
    if (input.objective === "MIN_COST" && profile === null) {
      throw new AppError(
        "VALIDATION_FAILED",
        "the lowest-cost objective prices candidates with the default hardware profile, and there is none; an admin adds one under Hardware",
        {
          fieldErrors: [{ path: "objective", message: "needs a default hardware profile" }],
        },
      );
    }
    const base = await this.baseConfig(input.model);
    if (!canSearchBatching(base)) plan.bounds.maxBatchSize = 0;
    const objective: SearchObjective = { kind: input.objective, p99BudgetUs: input.p99BudgetMs * 1000 };
    const hardware =
      profile === null
        ? null
        : {
            name: profile.name,
            kind: profile.kind,
            cpuCores: profile.cpuCores,
            gpuCount: profile.gpuCount,
            costPerHour: profile.costPerHour,
            currency: profile.currency,
          };

    const created = await this.prisma.$transaction(async (tx) => {
      const row = await tx.configSearch.create({
        data: {
          modelId: model.id,
          modelName: model.name,
          objective: input.objective,
          p99BudgetUs: objective.p99BudgetUs,
          plan: plan as unknown as Prisma.InputJsonObject,
          baseConfig: base as Prisma.InputJsonObject,
          ...(hardware !== null ? { hardware: hardware as Prisma.InputJsonObject } : {}),
          createdById: actor.userId,
        },
      });
      await recordAudit(tx, actor, {
        action: "configSearch.start",
        targetType: "ConfigSearch",
        targetId: row.id,
        after: { model: model.name, objective, plan },
      });
      return row;
    });
    const shadow = shadowModelName(model.name, created.id);
    const search: ActiveSearch = {
      id: created.id,
      model: model.name,
      shadow,
      controller: new AbortController(),
      cancelledBy: undefined,
      measuring: null,
      done: Promise.resolve(),
    };
    this.active = search;
    // The search waits its turn in the perf slot (an upload's automatic perf run may hold it), then measures.
    // Cancelled while waiting, it never measures: execute() then only writes its end (its signal is aborted).
    const execute = (): Promise<void> => this.execution.run(search, base, objective, plan, hardware);
    search.done = this.options.perfRuns
      .runExclusive(`the config search of '${input.model}'`, execute, search.controller.signal)
      .catch((error: unknown) => (search.controller.signal.aborted ? execute() : Promise.reject(error)))
      .catch((error: unknown) =>
        this.options.logger.error({ search: search.id, err: error }, "config search ended unexpectedly"),
      )
      .finally(() => {
        if (this.active === search) this.active = undefined;
      });
    return { id: created.id };
  }

  async cancel(actor: Actor, id: string, who: string): Promise<ConfigSearchView> {
    const search = this.active;
    if (search !== undefined && search.id === id) {
      search.cancelledBy ??= actor;
      search.controller.abort(new Error(`cancelled by ${who}`));
      await search.done;
      return this.views.view(id);
    }
    await this.prisma.$transaction(async (tx) => {
      const row = await tx.configSearch.findUnique({ where: { id } });
      if (row === null) throw notFound(`config search ${id}`);
      if (row.status !== "RUNNING")
        throw new AppError("CONFLICT", `config search ${id} is not running (it is ${row.status.toLowerCase()})`);
      // RUNNING without a search in this process: another control plane's, or one whose process died.
      await tx.configSearch.update({
        where: { id },
        data: { status: "CANCELLED", error: `cancelled by ${who}`, finishedAt: new Date() },
      });
      await recordAudit(tx, actor, {
        action: "configSearch.cancel",
        targetType: "ConfigSearch",
        targetId: id,
        before: { status: "RUNNING" },
        after: { status: "CANCELLED" },
      });
    });
    return this.views.view(id);
  }

  list(filter: { model?: string | undefined; limit: number }): Promise<ConfigSearchView[]> {
    return this.views.list(filter);
  }

  /** The search and every candidate by measurement order, each marked when it lies on the Pareto front. */
  get(id: string): Promise<ConfigSearchView & { candidates: ConfigSearchCandidateView[] }> {
    return this.views.get(id);
  }

  /**
   * Makes candidate `index` (default: the recommended one) the model's
   * config through the same path as a manual config edit (checked by the
   * gateway through a reload, audited as model.updateConfig with the search
   * named as its source), then records configSearch.apply. The model's
   * current config is the base, so edits made since the search started are
   * kept; only the searched fields change.
   */
  async apply(
    who: ModelActor,
    id: string,
    index?: number,
  ): Promise<ModelStateResult & { config: ModelConfigJson; appliedIndex: number }> {
    const search = await this.prisma.configSearch.findUnique({ where: { id } });
    if (search === null) throw notFound(`config search ${id}`);
    if (search.status === "RUNNING")
      throw new AppError("CONFLICT", `config search ${id} is still running; wait for it or cancel it, then apply`);
    const chosen = index ?? search.recommendedIndex;
    if (chosen === null) {
      throw new AppError(
        "CONFLICT",
        `config search ${id} recommends no candidate (none met the p99 budget of ${search.p99BudgetUs / 1000} ms); choose one by its index to apply it anyway`,
        {
          fieldErrors: [{ path: "index", message: "required: no recommended candidate" }],
        },
      );
    }
    const row = await this.prisma.configSearchCandidate.findUnique({
      where: { searchId_index: { searchId: id, index: chosen } },
    });
    if (row === null)
      throw new AppError("NOT_FOUND", `config search ${id} has no candidate ${chosen}`, {
        fieldErrors: [{ path: "index", message: "no such candidate" }],
      });
    if (row.error !== null || row.throughput <= 0) {
      throw new AppError(
        "CONFLICT",
        `candidate ${chosen} of config search ${id} was not measured (${row.error ?? "it served nothing"}); choose a measured one`,
        {
          fieldErrors: [{ path: "index", message: "not measured" }],
        },
      );
    }
    const current = await this.storedConfig(search.modelName);
    const config = configOf(current, candidateFromRow(row));
    const source = {
      configSearch: id,
      candidate: chosen,
      throughput: row.throughput,
      latencyP99Us: row.latencyP99Us,
      costPer1000: row.costPer1000,
    };
    const result = await this.options.configEdit.updateConfig(
      who,
      search.modelName,
      config as Record<string, unknown>,
      source,
    );
    await this.prisma.$transaction(async (tx) => {
      await tx.configSearch.update({ where: { id }, data: { appliedIndex: chosen, appliedAt: new Date() } });
      await recordAudit(tx, who.actor, {
        action: "configSearch.apply",
        targetType: "ConfigSearch",
        targetId: id,
        before: { appliedIndex: search.appliedIndex },
        after: { model: search.modelName, appliedIndex: chosen, candidate: candidateFromRow(row) },
      });
    });
    return { ...result, appliedIndex: chosen };
  }

  /** Resolves when the search (if it is this process's) has ended and its row is written. */
  async settled(id: string): Promise<void> {
    if (this.active?.id === id) await this.active.done;
  }

  /** Stops the running search (FAILED, candidates kept, shadow unloaded) and waits for it. Idempotent. */
  async stop(): Promise<void> {
    this.stopped = true;
    const search = this.active;
    if (search === undefined) return;
    search.controller.abort(new Error("interrupted: the control plane stopped during the search"));
    await search.done;
  }

  private async storedConfig(name: string): Promise<ModelConfigJson> {
    const text = await this.options.store.readConfigText(name);
    if (text === undefined) throw new AppError("CONFLICT", `model '${name}' has no config.pbtxt in the model store`);
    return parsePbtxt(text, `${name}/config.pbtxt`);
  }

  /** The model's config as the gateway serves it (Triton's defaults filled in): the search's start and the shadow's base. */
  private async baseConfig(name: string): Promise<ModelConfigJson> {
    const signatures = new Map<number, ModelIoMetadata>();
    for (const version of await this.options.store.versionsOnDisk(name)) {
      signatures.set(
        version,
        await readOnnxSignatureFile(
          this.options.store.modelFile(name, version),
          `${name}/${version}/${MODEL_FILE_NAME}`,
        ),
      );
    }
    if (signatures.size === 0)
      throw new AppError("CONFLICT", `model '${name}' has no version files in the model store; upload a version first`);
    return prepareConfig(name, await this.storedConfig(name), signatures).normalized;
  }
}
