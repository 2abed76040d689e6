import { readFile } from "node:fs/promises";
import type { ConfigSearchStatus, Prisma, PrismaClient } from "@operon/db";
import type { ModelConfigJson } from "@operon/model-config/model-config-types";
import { representativeStep, runConcurrencySweep } from "@operon/perf/concurrency-sweep";
import { messageOf } from "@operon/perf/perf-error";
import { runPerf } from "@operon/perf/run-perf";
import type { PerfInputsStore } from "../perf/perf-inputs.js";
import type { Logger } from "@operon/protocol/logger";
import { recordAudit, SYSTEM_ACTOR, type Actor } from "../audit/audit-log.js";
import type { GatewayClient, GatewayClientOptions } from "../gateway/gateway-client.js";
import { MODEL_FILE_NAME, type ModelStore } from "../models/model-store.js";
import { candidateOf, configOf } from "./candidate-config.js";
import type { ConfigSearchPlan, MeasurementPlan, SweepStep } from "./config-search-plan.js";
import type { ConfigSearchView } from "./config-search-views.js";
import { costPer1000Inferences, type CostProfileShape } from "./search-cost.js";
import {
  runSearch,
  type CandidateMeasurement,
  type MeasuredCandidate,
  type SearchCandidate,
  type SearchObjective,
} from "./search-strategy.js";

/**
 * The execution of one config search, in the perf slot: each candidate
 * loaded as the shadow model and measured at a short concurrency sweep,
 * stored as it is measured, the shadow unloaded however the search ends,
 * and the end written with its audit event.
 */

/** The search running in this process. */
export interface ActiveSearch {
  id: string;
  model: string;
  shadow: string;
  controller: AbortController;
  cancelledBy: Actor | undefined;
  measuring: ConfigSearchView["measuring"];
  done: Promise<void>;
}

export interface ConfigSearchExecutionOptions {
  prisma: PrismaClient;
  gateway: GatewayClient;
  gatewayOptions: GatewayClientOptions;
  store: ModelStore;
  logger: Logger;
  /** The measured model's perf inputs (shapes for variable dims, sample data) fill the shadow's requests. */
  perfRuns: { inputs: PerfInputsStore };
}

export class ConfigSearchExecution {
  constructor(private readonly options: ConfigSearchExecutionOptions) {}

  private get prisma(): PrismaClient {
    return this.options.prisma;
  }

  private async shadowFiles(name: string): Promise<Map<string, Buffer>> {
    const files = new Map<string, Buffer>();
    for (const version of await this.options.store.versionsOnDisk(name)) {
      files.set(`${version}/${MODEL_FILE_NAME}`, await readFile(this.options.store.modelFile(name, version)));
    }
    return files;
  }

  async run(
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
            return this.measureAt(search.model, search.shadow, concurrency, plan.measurement, signal);
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

  /** One step of the sweep: runPerf at one concurrency against the shadow model, with the model's perf inputs. */
  private async measureAt(
    model: string,
    shadow: string,
    concurrency: number,
    plan: MeasurementPlan,
    signal: AbortSignal,
  ): Promise<SweepStep> {
    const { gatewayOptions } = this.options;
    const inputs = await this.options.perfRuns.inputs.optionsFor({ kind: "MODEL", name: model });
    const report = await runPerf({
      ...inputs,
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

function round1(value: number): number {
  return Math.round(value * 10) / 10;
}
