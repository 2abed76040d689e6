import type {
  ConfigSearch as ConfigSearchRow,
  ConfigSearchCandidate as CandidateRow,
  ConfigSearchObjective,
  ConfigSearchStatus,
  PrismaClient,
} from "@operon/db";
import type { ModelConfigJson } from "@operon/model-config/model-config-types";
import { notFound } from "../../app-error.js";
import { parseJsonColumn, type JsonColumnRef } from "../json-column.js";
import {
  candidateBatchingSchema,
  candidateConfigSchema,
  configSearchPlanSchema,
  searchHardwareSchema,
  sweepStepsSchema,
  type ConfigSearchPlan,
  type SearchHardware,
  type SweepStep,
} from "./config-search-plan.js";
import { paretoFront, type SearchCandidate } from "./search-strategy.js";

/** What the config search pages read: a search (with what it measures now, while it runs here) and its candidates. */

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
  hardware: SearchHardware | null;
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

export class ConfigSearchViews {
  constructor(
    private readonly prisma: PrismaClient,
    /** What the search running in this process measures now; null for any other search. */
    private readonly measuringOf: (id: string) => ConfigSearchView["measuring"],
  ) {}

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

  async view(id: string): Promise<ConfigSearchView> {
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
      plan: parseJsonColumn(configSearchPlanSchema, row.plan, { table: "ConfigSearch", column: "plan", id: row.id }),
      hardware:
        row.hardware === null
          ? null
          : parseJsonColumn(searchHardwareSchema, row.hardware, {
              table: "ConfigSearch",
              column: "hardware",
              id: row.id,
            }),
      recommendedIndex: row.recommendedIndex,
      appliedIndex: row.appliedIndex,
      appliedAt: row.appliedAt,
      stopReason: row.stopReason,
      error: row.error,
      createdAt: row.createdAt,
      finishedAt: row.finishedAt,
      measuring: this.measuringOf(row.id),
      candidateCount,
    };
  }
}

export function candidateFromRow(row: CandidateRow): SearchCandidate {
  return {
    instanceCount: row.instanceCount,
    maxBatchSize: row.maxBatchSize,
    dynamicBatching:
      row.dynamicBatching === null
        ? null
        : parseJsonColumn(candidateBatchingSchema, row.dynamicBatching, candidateColumn(row, "dynamicBatching")),
  };
}

function candidateView(row: CandidateRow, pareto: boolean): ConfigSearchCandidateView {
  return {
    index: row.index,
    dimension: row.dimension,
    ...candidateFromRow(row),
    config: parseJsonColumn(candidateConfigSchema, row.config, candidateColumn(row, "config")) as ModelConfigJson,
    throughput: row.throughput,
    latencyP99Us: row.latencyP99Us,
    concurrency: row.concurrency,
    costPer1000: row.costPer1000,
    withinBudget: row.withinBudget,
    steps: parseJsonColumn(sweepStepsSchema, row.steps, candidateColumn(row, "steps")),
    error: row.error,
    pareto,
  };
}

/** Where a candidate column was read from. */
function candidateColumn(row: CandidateRow, column: string): JsonColumnRef {
  return { table: "ConfigSearchCandidate", column, id: row.id };
}
