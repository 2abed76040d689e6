import { readFile } from "node:fs/promises";
import type {
  ConfigSearch as ConfigSearchRow,
  ConfigSearchCandidate as CandidateRow,
  ConfigSearchObjective,
  ConfigSearchStatus,
  Prisma,
  PrismaClient,
} from "@operon/db";
import type { ModelIoMetadata } from "@operon/model-config/auto-complete";
import type { ModelConfigJson } from "@operon/model-config/model-config-types";
import { readOnnxSignatureFile } from "@operon/model-config/onnx-signature";
import { parsePbtxt } from "@operon/model-config/pbtxt-parser";
import { messageOf } from "@operon/perf/perf-error";
import { runPerf } from "@operon/perf/run-perf";
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
import { candidateOf, canSearchBatching, configOf, shadowModelName } from "./candidate-config.js";
import { representativeStep, runConcurrencySweep, type SweepStepResult } from "@operon/perf/concurrency-sweep";
import { costPer1000Inferences, type CostProfileShape } from "./search-cost.js";
import {
  DEFAULT_SEARCH_BOUNDS,
  paretoFront,
  runSearch,
  type CandidateMeasurement,
  type MeasuredCandidate,
  type SearchBounds,
  type SearchCandidate,
  type SearchObjective,
} from "./search-strategy.js";

/** One concurrency step of a candidate's sweep, as stored with the candidate. */
export interface SweepStep extends SweepStepResult {
  /** null when no request succeeded. */
  latencyP99Us: number | null;
  requests: number;
  errors: number;
}

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
export interface ConfigSearchInput {
  model: string;
  objective: ConfigSearchObjective;
  p99BudgetMs: number;
  bounds?: Partial<SearchBounds> | undefined;
  measurement?: Partial<MeasurementPlan> | undefined;
}

export interface MeasurementPlan {
  /** The sweep goes 1, 2, 4, … up to this. */
  maxConcurrency: number;
  measurementIntervalMs: number;
  /** Windows per step at most (perf_analyzer's max trials). */
  maxTrials: number;
}

export const DEFAULT_MEASUREMENT: MeasurementPlan = { maxConcurrency: 8, measurementIntervalMs: 1000, maxTrials: 3 };

/** What ConfigSearch.plan holds. */
export interface ConfigSearchPlan {
  bounds: SearchBounds;
  measurement: MeasurementPlan;
}

export interface ConfigSearchCandidateView {
  index: number;
  dimension: string;
  instanceCount: number;
  maxBatchSize: number;
  dynamicBatching: SearchCandidate["dynamicBatching"];
  config: ModelConfigJson;
  throughput: number;
  latencyP99Us: number | null;
  concurrency: number;
  costPer1000: number | null;
  withinBudget: boolean;
  steps: SweepStep[];
  error: string | null;
  /** On the throughput-vs-p99 Pareto front of the search's candidates. */
  pareto: boolean;
}

export interface ConfigSearchView {
  id: string;
  model: string;
  status: ConfigSearchStatus;
  objective: ConfigSearchObjective;
  p99BudgetUs: number;
  plan: ConfigSearchPlan;
  hardware: (CostProfileShape & { name: string; currency: string }) | null;
  recommendedIndex: number | null;
  appliedIndex: number | null;
  appliedAt: Date | null;
  stopReason: string | null;
  error: string | null;
  createdAt: Date;
  finishedAt: Date | null;
  /** While running in this process: the candidate being measured. */
  measuring: { candidate: SearchCandidate; concurrency: number | null } | null;
  candidateCount: number;
}

interface ActiveSearch {
  id: string;
  model: string;
  shadow: string;
  controller: AbortController;
  cancelledBy: Actor | undefined;
  measuring: ConfigSearchView["measuring"];
  done: Promise<void>;
}

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

  constructor(private readonly options: ConfigSearchesOptions) {}

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
    const execute = (): Promise<void> => this.execute(search, base, objective, plan, hardware);
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
      return this.view(id);
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
    return this.view(id);
  }

  async list(filter: { model?: string | undefined; limit: number }): Promise<ConfigSearchView[]> {
    const rows = await this.prisma.configSearch.findMany({
      where: filter.model !== undefined ? { modelName: filter.model } : {},
      include: { _count: { select: { candidates: true } } },
      orderBy: { createdAt: "desc" },
      take: filter.limit,
    });
    return rows.map((row) => this.viewOf(row, row._count.candidates));
  }

  /** The search and every candidate by measurement order, each marked when it lies on the Pareto front. */
  async get(id: string): Promise<ConfigSearchView & { candidates: ConfigSearchCandidateView[] }> {
    const row = await this.prisma.configSearch.findUnique({
      where: { id },
      include: { candidates: { orderBy: { index: "asc" } } },
    });
    if (row === null) throw notFound(`config search ${id}`);
    const front = new Set(paretoFront(row.candidates).map((candidate) => candidate.index));
    return {
      ...this.viewOf(row, row.candidates.length),
      candidates: row.candidates.map((candidate) => candidateView(candidate, front.has(candidate.index))),
    };
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

  private async view(id: string): Promise<ConfigSearchView> {
    const row = await this.prisma.configSearch.findUnique({
      where: { id },
      include: { _count: { select: { candidates: true } } },
    });
    if (row === null) throw notFound(`config search ${id}`);
    return this.viewOf(row, row._count.candidates);
  }

  private viewOf(row: ConfigSearchRow, candidateCount: number): ConfigSearchView {
    return {
      id: row.id,
      model: row.modelName,
      status: row.status,
      objective: row.objective,
      p99BudgetUs: row.p99BudgetUs,
      plan: row.plan as unknown as ConfigSearchPlan,
      hardware: (row.hardware as unknown as ConfigSearchView["hardware"]) ?? null,
      recommendedIndex: row.recommendedIndex,
      appliedIndex: row.appliedIndex,
      appliedAt: row.appliedAt,
      stopReason: row.stopReason,
      error: row.error,
      createdAt: row.createdAt,
      finishedAt: row.finishedAt,
      measuring: this.active?.id === row.id ? this.active.measuring : null,
      candidateCount,
    };
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

  private async shadowFiles(name: string): Promise<Map<string, Buffer>> {
    const files = new Map<string, Buffer>();
    for (const version of await this.options.store.versionsOnDisk(name)) {
      files.set(`${version}/${MODEL_FILE_NAME}`, await readFile(this.options.store.modelFile(name, version)));
    }
    return files;
  }

  private async execute(
    search: ActiveSearch,
    base: ModelConfigJson,
    objective: SearchObjective,
    plan: ConfigSearchPlan,
    hardware: CostProfileShape | null,
  ): Promise<void> {
    const { gateway, logger } = this.options;
    const signal = search.controller.signal;
    let failure: string | undefined;
    let outcome: Awaited<ReturnType<typeof runSearch>> | undefined;
    const measured: MeasuredCandidate[] = [];
    try {
      const taken =
        (await gateway.repositoryIndex()).some((entry) => entry.name === search.shadow) ||
        (await this.prisma.model.findUnique({ where: { name: search.shadow }, select: { id: true } })) !== null;
      if (taken) throw new Error(`the name '${search.shadow}' the search measures under is taken by another model`);
      const files = await this.shadowFiles(search.model);
      const errors = new Map<SearchCandidate, string>();
      const stepsOf = new Map<SearchCandidate, SweepStep[]>();
      const measure = async (candidate: SearchCandidate): Promise<CandidateMeasurement> => {
        search.measuring = { candidate, concurrency: null };
        const unmeasured: CandidateMeasurement = {
          throughput: 0,
          latencyP99Us: null,
          concurrency: 0,
          costPer1000: null,
        };
        try {
          await gateway.loadModel(search.shadow, {
            config: configOf(base, candidate, search.shadow) as Record<string, unknown>,
            files,
          });
        } catch (error) {
          // A config the gateway refuses (too many instances for its limits, ...) is a measured dead end, not a failed search.
          if (signal.aborted) throw signal.reason;
          errors.set(candidate, `the gateway refused the candidate's config: ${messageOf(error)}`);
          return unmeasured;
        }
        const { steps } = await runConcurrencySweep(
          {
            maxConcurrency: plan.measurement.maxConcurrency,
            minGainPercent: plan.bounds.minGainPercent,
            p99BudgetUs: objective.p99BudgetUs,
          },
          async (concurrency) => {
            search.measuring = { candidate, concurrency };
            return this.measureAt(search.shadow, concurrency, plan.measurement, signal);
          },
        );
        stepsOf.set(candidate, steps);
        const step = representativeStep(steps, objective.p99BudgetUs);
        if (step === undefined || step.requests === 0) {
          errors.set(candidate, "every request failed");
          return unmeasured;
        }
        return {
          throughput: step.throughput,
          latencyP99Us: step.latencyP99Us,
          concurrency: step.concurrency,
          costPer1000:
            hardware === null ? null : costPer1000Inferences(step.throughput, candidate.instanceCount, hardware),
        };
      };
      const onMeasured = async (candidate: MeasuredCandidate): Promise<void> => {
        measured.push(candidate);
        const { measurement } = candidate;
        await this.prisma.configSearchCandidate.create({
          data: {
            searchId: search.id,
            index: candidate.index,
            dimension: candidate.dimension,
            instanceCount: candidate.candidate.instanceCount,
            maxBatchSize: candidate.candidate.maxBatchSize,
            ...(candidate.candidate.dynamicBatching !== null
              ? { dynamicBatching: candidate.candidate.dynamicBatching as unknown as Prisma.InputJsonObject }
              : {}),
            config: configOf(base, candidate.candidate) as Prisma.InputJsonObject,
            throughput: measurement.throughput,
            latencyP99Us: measurement.latencyP99Us,
            concurrency: measurement.concurrency,
            costPer1000: measurement.costPer1000,
            withinBudget: candidate.withinBudget,
            steps: (stepsOf.get(candidate.candidate) ?? []) as unknown as Prisma.InputJsonArray,
            error: errors.get(candidate.candidate) ?? null,
          },
        });
      };
      outcome = await runSearch(candidateOf(base), objective, plan.bounds, measure, { signal, onMeasured });
    } catch (error) {
      failure = signal.aborted ? messageOf(signal.reason) : messageOf(error);
    } finally {
      search.measuring = null;
      await gateway.unloadModel(search.shadow).catch((error: unknown) => {
        // Not loaded (the first load failed) is the common case; anything else is worth a line.
        logger.info(
          { err: error, search: search.id, shadow: search.shadow },
          "could not unload the config search's shadow model",
        );
      });
    }
    const status: ConfigSearchStatus =
      outcome !== undefined ? "SUCCEEDED" : signal.aborted && search.cancelledBy !== undefined ? "CANCELLED" : "FAILED";
    const recommendedIndex = outcome?.recommended ?? null;
    try {
      await this.prisma.$transaction(async (tx) => {
        await tx.configSearch.update({
          where: { id: search.id },
          data: {
            status,
            error: failure ?? null,
            finishedAt: new Date(),
            recommendedIndex,
            stopReason: outcome?.stopReason ?? null,
          },
        });
        const action =
          status === "SUCCEEDED"
            ? "configSearch.finish"
            : status === "CANCELLED"
              ? "configSearch.cancel"
              : "configSearch.fail";
        await recordAudit(tx, status === "CANCELLED" ? search.cancelledBy! : SYSTEM_ACTOR, {
          action,
          targetType: "ConfigSearch",
          targetId: search.id,
          before: { status: "RUNNING" },
          after: {
            status,
            error: failure ?? null,
            candidates: measured.length,
            recommendedIndex,
            stopReason: outcome?.stopReason ?? null,
          },
        });
      });
      if (status === "FAILED") logger.info({ search: search.id, error: failure }, "config search failed");
    } catch (writeError) {
      logger.error({ search: search.id, err: writeError }, "could not store the end of a config search");
      await this.prisma.configSearch
        .update({
          where: { id: search.id },
          data: {
            status: "FAILED",
            error: `the result could not be stored: ${messageOf(writeError)}`,
            finishedAt: new Date(),
          },
        })
        .catch((error: unknown) =>
          logger.error(
            { search: search.id, err: error },
            "could not mark the config search failed; it stays RUNNING until the next restart",
          ),
        );
    }
  }

  /** One step of the sweep: runPerf at one concurrency against the shadow model. */
  private async measureAt(
    shadow: string,
    concurrency: number,
    plan: MeasurementPlan,
    signal: AbortSignal,
  ): Promise<SweepStep> {
    const { gatewayOptions } = this.options;
    const report = await runPerf({
      model: shadow,
      protocol: "http",
      url: gatewayOptions.httpUrl,
      concurrencyRange: { start: concurrency, end: concurrency, step: 1 },
      measurementIntervalMs: plan.measurementIntervalMs,
      maxTrials: plan.maxTrials,
      signal,
      ...(gatewayOptions.adminKey ? { headers: { authorization: `Bearer ${gatewayOptions.adminKey}` } } : {}),
    });
    if (signal.aborted) throw signal.reason;
    const step = report.steps[0];
    if (step === undefined) return { concurrency, throughput: 0, latencyP99Us: null, requests: 0, errors: 0 };
    return {
      concurrency,
      throughput: round1(step.throughputInferPerSec),
      latencyP99Us: step.requests > 0 ? round1(step.latencyUs.p99) : null,
      requests: step.requests,
      errors: step.errors,
    };
  }
}

/** Bounds and measurement plan from the input over the defaults, checked. */
function planOf(input: ConfigSearchInput): ConfigSearchPlan {
  const plan: ConfigSearchPlan = {
    bounds: { ...DEFAULT_SEARCH_BOUNDS, ...stripUndefined(input.bounds ?? {}) },
    measurement: { ...DEFAULT_MEASUREMENT, ...stripUndefined(input.measurement ?? {}) },
  };
  if (!(input.p99BudgetMs > 0))
    throw new AppError("VALIDATION_FAILED", "the p99 budget must be above 0 ms", {
      fieldErrors: [{ path: "p99BudgetMs", message: "above 0" }],
    });
  plan.bounds.queueDelaysUs = [...new Set(plan.bounds.queueDelaysUs)].sort((a, b) => a - b);
  return plan;
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, entry]) => entry !== undefined)) as Partial<T>;
}

function candidateFromRow(row: CandidateRow): SearchCandidate {
  return {
    instanceCount: row.instanceCount,
    maxBatchSize: row.maxBatchSize,
    dynamicBatching: (row.dynamicBatching as unknown as SearchCandidate["dynamicBatching"]) ?? null,
  };
}

function candidateView(row: CandidateRow, pareto: boolean): ConfigSearchCandidateView {
  return {
    index: row.index,
    dimension: row.dimension,
    ...candidateFromRow(row),
    config: row.config as unknown as ModelConfigJson,
    throughput: row.throughput,
    latencyP99Us: row.latencyP99Us,
    concurrency: row.concurrency,
    costPer1000: row.costPer1000,
    withinBudget: row.withinBudget,
    steps: row.steps as unknown as SweepStep[],
    error: row.error,
    pareto,
  };
}

function round1(value: number): number {
  return Math.round(value * 10) / 10;
}
