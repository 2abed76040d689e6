import type { PerfTargetKind, PrismaClient } from "@operon/db";
import { AppError } from "../../app-error.js";
import type { GatewayClient } from "../gateway/gateway-client.js";

/** The rows a report links to, where they exist (a repository model has no Model row until the usage sampler sees it). */
export interface TargetLinks {
  modelId?: string;
  modelVersionId?: string;
  operatorId?: string;
  hardwareProfileId?: string;
}

/** Links to the target's rows, after checking with the gateway that the target is served as the kind named (and batchSize within its max_batch_size). */
export async function resolvePerfTarget(
  prisma: PrismaClient,
  gateway: GatewayClient,
  target: { kind: PerfTargetKind; name: string; version?: string | undefined },
  batchSize: number,
): Promise<TargetLinks> {
  const { kind, name, version } = target;
  const what = `${kind === "MODEL" ? "model" : "operator"} '${name}'${version !== undefined ? ` version ${version}` : ""}`;
  let maxBatchSize: number;
  try {
    await gateway.modelMetadata(name, version);
    maxBatchSize = Number((await gateway.modelConfig(name, version))["max_batch_size"] ?? 0) || 0;
  } catch (error) {
    if (error instanceof AppError && error.code === "NOT_FOUND") {
      throw new AppError("NOT_FOUND", `${what} is not served by the gateway; load it first (${error.message})`, {
        fieldErrors: [{ path: "target.name", message: "not served" }],
        cause: error,
      });
    }
    throw error;
  }
  const isOperator = (await gateway.listOperators()).some((operator) => operator.name === name);
  if (isOperator !== (kind === "OPERATOR")) {
    throw new AppError(
      "VALIDATION_FAILED",
      `'${name}' is ${isOperator ? "an operator" : "a model"}, not ${kind === "OPERATOR" ? "an operator" : "a model"}; choose target kind ${isOperator ? "OPERATOR" : "MODEL"}`,
      {
        fieldErrors: [{ path: "target.kind", message: `'${name}' is ${isOperator ? "an operator" : "a model"}` }],
      },
    );
  }
  const batchLimit = Math.max(1, maxBatchSize);
  if (batchSize > batchLimit) {
    throw new AppError(
      "VALIDATION_FAILED",
      `batch size ${batchSize} is above ${what}'s max_batch_size (${maxBatchSize === 0 ? "0: it does not batch, so only 1" : maxBatchSize})`,
      {
        fieldErrors: [{ path: "batchSize", message: `at most ${batchLimit}` }],
      },
    );
  }
  const profile = await prisma.hardwareProfile.findFirst({ where: { isDefault: true }, select: { id: true } });
  const links: TargetLinks = {};
  if (profile !== null) links.hardwareProfileId = profile.id;
  if (kind === "MODEL") {
    const model = await prisma.model.findUnique({ where: { name }, select: { id: true } });
    if (model !== null) {
      links.modelId = model.id;
      if (version !== undefined && /^\d+$/.test(version)) {
        const row = await prisma.modelVersion.findUnique({
          where: { modelId_version: { modelId: model.id, version: Number(version) } },
          select: { id: true },
        });
        if (row !== null) links.modelVersionId = row.id;
      }
    }
  } else {
    const operator = await prisma.operator.findUnique({ where: { name }, select: { id: true } });
    if (operator !== null) links.operatorId = operator.id;
  }
  return links;
}
