import type { Prisma, PrismaClient, SchedulerAction } from "@operon/db";
import { AppError } from "../../app-error.js";
import type { GatewayClient } from "../gateway/gateway-client.js";
import { modelStepsOf, operatorCapacity, type OperatorCapacity } from "./operator-capacity.js";
import type { HardwareChoice, HardwareKindName } from "./hardware-fit.js";
import { reportCapacities } from "./report-capacities.js";
import { capacityOf, type ModelState, type SchedulerPolicy } from "./scheduler-decisions.js";

/**
 * The resource scheduler's read side: what the console and the API show of
 * it (the views of a period, the decisions' pages, an operator's capacity
 * now). The period loop (resource-scheduler.ts) makes the views; nothing
 * here changes the scheduler's state or the gateway's.
 */

/** What the console shows of one model now. */
export interface SchedulerModelView {
  model: string;
  instances: number;
  parked: boolean;
  kind: "CPU" | "GPU";
  demandRps: number;
  capacityRps: number;
  capacitySource: "report" | "default";
  /**
   * Why a default capacity (issue 27, item 7: say it): "no-report" (no successful perf report), or "over-budget"
   * (reports exist, but no step of the latest had its p99 within the budget); null when a report gave it.
   */
  defaultReason: "no-report" | "over-budget" | null;
  /** The p99 budget a report's step must meet to give the capacity. */
  p99BudgetMs: number;
  pinned: number | null;
  lastUsedAt: string | null;
  /** Hardware fit (a model whose config lists the kinds it may run on): each kind's cost and why one is chosen. */
  hardware: (HardwareChoice & { allowed: HardwareKindName[] }) | null;
}

/** What the console shows of one operator: its capacity from its steps', its bottleneck, and its demand. */
export interface OperatorCapacityView extends OperatorCapacity {
  /** Operator requests per second the scheduler sized its steps for at the last period; null before the second. */
  demandRps: number | null;
  /** What the demand was made of (arrivals, saturation, a cap). */
  demandBasis: string | null;
  p99BudgetMs: number;
}

export interface SchedulerDecisionView {
  id: string;
  at: Date;
  model: string;
  /** The operator whose demand caused it; null for a model's own demand. */
  operator: string | null;
  action: SchedulerAction;
  fromCount: number;
  toCount: number;
  demandRps: number | null;
  capacityRps: number | null;
  capacitySource: string | null;
  headroom: number | null;
  /** MOVE: the kind the model moved to. */
  kind: string | null;
  reason: string;
  applied: boolean;
  error: string | null;
}

/** Which decisions a page lists: by model or operator, `limit` of them, older than the id `before`. */
export interface DecisionFilter {
  model?: string | undefined;
  operator?: string | undefined;
  limit: number;
  before?: string | undefined;
}

/** Decisions, newest first; `before` (an id) pages back. */
export async function listDecisions(
  prisma: PrismaClient,
  filter: DecisionFilter,
): Promise<{ decisions: SchedulerDecisionView[]; nextBefore: string | null }> {
  const where: Prisma.SchedulerDecisionWhereInput = {
    ...(filter.model ? { model: filter.model } : {}),
    ...(filter.operator ? { operator: filter.operator } : {}),
    ...(filter.before ? { id: { lt: BigInt(filter.before) } } : {}),
  };
  const rows = await prisma.schedulerDecision.findMany({
    where,
    orderBy: { id: "desc" },
    take: filter.limit + 1,
  });
  const page = rows.slice(0, filter.limit);
  return {
    decisions: page.map((row) => ({
      id: row.id.toString(),
      at: row.at,
      model: row.model,
      operator: row.operator,
      action: row.action,
      fromCount: row.fromCount,
      toCount: row.toCount,
      demandRps: row.demandRps,
      capacityRps: row.capacityRps,
      capacitySource: row.capacitySource,
      headroom: row.headroom,
      kind: row.kind,
      reason: row.reason,
      applied: row.applied,
      error: row.error,
    })),
    nextBefore: rows.length > filter.limit ? page.at(-1)!.id.toString() : null,
  };
}

/**
 * One operator's capacity now (GroupAssign): each model step's per-instance throughput at the p99 budget (latest
 * perf report, else the default) × its model's instances ÷ its calls per operator request; the least is the
 * operator's, and its step the bottleneck. Read fresh from the gateway and the reports; the demand is the last
 * period's (`last`). NOT_FOUND when the gateway does not serve the operator.
 */
export async function readOperatorCapacity(
  deps: { prisma: PrismaClient; gateway: GatewayClient; policy: SchedulerPolicy; p99BudgetMs: number },
  name: string,
  last: OperatorCapacityView | undefined,
): Promise<OperatorCapacityView> {
  const [operators, scaling] = await Promise.all([deps.gateway.listOperators(), deps.gateway.scalingState()]);
  const served = operators.filter((operator) => operator.name === name).at(-1);
  if (served === undefined) throw new AppError("NOT_FOUND", `the gateway serves no operator '${name}'`);
  const steps = modelStepsOf(served.spec);
  const instances = new Map(scaling.models.map((entry) => [entry.model, entry.instances]));
  const parked = new Set(scaling.parked);
  const reports = await reportCapacities(deps.prisma, [...new Set(steps.map((step) => step.model))], deps.p99BudgetMs);
  const capacity = operatorCapacity(name, steps, (model) => {
    const perInstance = capacityOf({ reportCapacityRps: reports.get(model) ?? null } as ModelState, deps.policy);
    return {
      instances: parked.has(model) ? 0 : (instances.get(model) ?? 0),
      perInstanceRps: perInstance.rps,
      source: perInstance.source,
    };
  });
  return {
    ...capacity,
    demandRps: last?.demandRps ?? null,
    demandBasis: last?.demandBasis ?? null,
    p99BudgetMs: deps.p99BudgetMs,
  };
}
