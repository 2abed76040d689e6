import type { PerfTargetKind, PrismaClient } from "@operon/db";
import { isShadowModelName } from "@operon/protocol/shadow-models";
import { AppError } from "../../app-error.js";
import type { GatewayClient } from "../gateway/gateway-client.js";
import type { TargetSignature, TensorSpec } from "./input-mapping.js";

/**
 * A job's target as the gateway serves it: its inputs, outputs and batch
 * dimension (KServe v2 metadata and config), after checking that it is
 * served as the kind named. Config-search shadow models are no job's target.
 */
export interface JobTarget {
  kind: PerfTargetKind;
  name: string;
  version?: string | undefined;
}

export async function targetSignature(gateway: GatewayClient, target: JobTarget): Promise<TargetSignature> {
  const what = `${target.kind === "MODEL" ? "model" : "operator"} '${target.name}'`;
  if (isShadowModelName(target.name))
    throw new AppError("VALIDATION_FAILED", `${what} is a config search's shadow model, not a job target`, {
      fieldErrors: [{ path: "target.name", message: "a shadow model" }],
    });
  let metadata: Record<string, unknown>;
  let config: Record<string, unknown>;
  try {
    metadata = await gateway.modelMetadata(target.name, target.version);
    config = await gateway.modelConfig(target.name, target.version);
  } catch (error) {
    if (error instanceof AppError && error.code === "NOT_FOUND")
      throw new AppError("NOT_FOUND", `${what} is not served by the gateway; load it first (${error.message})`, {
        fieldErrors: [{ path: "target.name", message: "not served" }],
      });
    throw error;
  }
  const isOperator = (await gateway.listOperators()).some((operator) => operator.name === target.name);
  if (isOperator !== (target.kind === "OPERATOR"))
    throw new AppError(
      "VALIDATION_FAILED",
      `'${target.name}' is ${isOperator ? "an operator" : "a model"}; use ${isOperator ? "--operator / kind OPERATOR" : "--model / kind MODEL"}`,
      { fieldErrors: [{ path: "target.kind", message: isOperator ? "an operator" : "a model" }] },
    );
  return {
    inputs: tensorsOf(metadata["inputs"]),
    outputs: tensorsOf(metadata["outputs"]),
    maxBatchSize: Number(config["max_batch_size"] ?? 0) || 0,
    instances: instancesOf(config["instance_group"]),
  };
}

/** The instances an instance_group list runs (a group without a count is one); undefined without a list. */
export function instancesOf(groups: unknown): number | undefined {
  if (!Array.isArray(groups) || groups.length === 0) return undefined;
  return groups.reduce((sum: number, group: { count?: unknown }) => sum + (Number(group?.count ?? 1) || 1), 0);
}

function tensorsOf(value: unknown): TensorSpec[] {
  if (!Array.isArray(value)) return [];
  return value.map((tensor: { name?: unknown; datatype?: unknown; shape?: unknown }) => ({
    name: String(tensor.name),
    datatype: String(tensor.datatype),
    shape: Array.isArray(tensor.shape) ? tensor.shape.map(Number) : [],
  }));
}

/** The latency budget of a job's requests when no perf report gives one. */
export const DEFAULT_JOB_BUDGET_MS = 50;

/**
 * The job's latency budget from the target's latest successful perf report:
 * twice the p99 at its lowest concurrency (the latency of an instance that
 * is not queueing; over twice that, requests wait for each other), at least
 * 2 ms. Without a report: DEFAULT_JOB_BUDGET_MS.
 */
export async function jobBudget(
  prisma: PrismaClient,
  target: JobTarget,
): Promise<{ budgetMs: number; source: "report" | "default" }> {
  const report = await prisma.perfReport.findFirst({
    where: { targetKind: target.kind, targetName: target.name, status: "SUCCEEDED" },
    orderBy: { createdAt: "desc" },
    include: { samples: { orderBy: { concurrency: "asc" }, take: 1 } },
  });
  const p99Us = report?.samples[0]?.latencyP99Us;
  if (p99Us === null || p99Us === undefined || !(p99Us > 0))
    return { budgetMs: DEFAULT_JOB_BUDGET_MS, source: "default" };
  return { budgetMs: Math.max(2, (2 * p99Us) / 1000), source: "report" };
}
