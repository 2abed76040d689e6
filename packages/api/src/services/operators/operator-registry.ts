import type { AdvisoryLocks, Operator, Prisma, PrismaClient } from "@operon/db";
import { specModels, specSteps } from "@operon/operator-spec/spec-summary";
import { AppError, notFound, type FieldError } from "../../app-error.js";
import { recordAudit, type Actor } from "../audit/audit-log.js";
import type { GatewayClient, GatewayOperator, OperatorProblem, OperatorValidation } from "../gateway/gateway-client.js";
import { gatewayInputsOf, type TryInputTensor } from "../gateway/binary-inputs.js";
import { KeyedLock } from "../keyed-lock.js";
import { isUniqueViolation } from "../accounts/user-accounts.js";
import type { Logger } from "@operon/protocol/logger";
import type { TargetChangeListener } from "../target-changes.js";

/**
 * Operators (DAGs of model calls) as the control plane keeps them: the
 * database holds every version of each spec; the gateway serves the latest
 * one, in memory. The two are kept in step by one rule:
 *
 * - create / update register with the gateway first (which validates the
 *   spec against the models it serves), then write the database; if the
 *   gateway refuses, nothing is stored; if the database write fails, the
 *   gateway change is undone (unregister, or re-register the previous spec).
 * - delete unregisters first, then deletes the rows (re-registering if that fails).
 * - syncToGateway() re-registers every stored operator, for a gateway that
 *   (re)started with none.
 *
 * Changes of one operator run one at a time (KeyedLock), so the gateway and
 * the database cannot see them in different orders.
 */

/** Where a served operator comes from: this API (stored), or a Triton ensemble of the model repository. */
export type OperatorSource = "api" | "repository";

/**
 * Whether the gateway serves the operator now; DEGRADED when it does but a
 * model its steps call is not ready (unreadyModels names them); UNKNOWN when
 * the gateway could not be asked.
 */
export type OperatorServedState = "SERVED" | "DEGRADED" | "NOT_SERVED" | "UNKNOWN";

/** A step's circuit breaker state at the gateway (closed: calls go through; open: refused; half-open: probing). */
export interface StepBreaker {
  step: string;
  state: "closed" | "open" | "half-open";
}

export interface OperatorSummary {
  name: string;
  description: string | null;
  source: OperatorSource;
  /** True when the operator is stored here (false for ensembles and operators registered at the gateway directly). */
  stored: boolean;
  latestVersion: number | null;
  state: OperatorServedState;
  /** With DEGRADED: the step models that cannot serve now. */
  unreadyModels: string[];
  /** The circuit breaker of each step that has one, as the gateway's served version holds it now; [] when not served. */
  breakers: StepBreaker[];
  /** Models the model steps call, in step order, without duplicates. */
  models: string[];
  stepCount: number;
  owner: { id: string; email: string } | null;
  createdAt: Date | null;
  updatedAt: Date | null;
}

export interface OperatorVersionSummary {
  version: number;
  spec: Record<string, unknown>;
  createdAt: Date;
  createdBy: { id: string; email: string } | null;
}

export interface OperatorDetail extends OperatorSummary {
  spec: Record<string, unknown>;
  versions: Array<Omit<OperatorVersionSummary, "spec">>;
}

/** One step of a try run: its timing and, for a model step that ran, its outputs. */
export interface TryRunStep {
  name: string;
  kind: string;
  model: string | null;
  /** As the gateway reports it: ok, skipped, failed, cancelled... */
  status: string;
  /** Microseconds from the first step's start; null for steps that did not run. */
  startUs: number | null;
  endUs: number | null;
  durationUs: number | null;
  /** The tensors a model step produced (empty for routes, exits and steps that did not end ok). */
  outputs: StepOutputTensor[];
}

/**
 * One tensor a step produced, as the gateway's `operon_step_outputs` shows it:
 * KServe v2 JSON, `name` as on the operator's board, `data` flat and cut to
 * the gateway's first 256 elements (`truncated`), `shape` the full shape.
 */
export interface StepOutputTensor {
  name: string;
  datatype: string;
  shape: number[];
  data: unknown[];
  truncated: boolean;
}

export interface TryRunResult {
  outputs: unknown[];
  /** Round trip seen by the control plane, milliseconds. */
  latencyMs: number;
  steps: TryRunStep[];
}

export interface SyncFailure {
  name: string;
  message: string;
}

/** Request and response parameter of the gateway's step timings (see the README's operators section). */
export const STEP_TIMINGS_PARAMETER = "operon_step_timings";
/** Request and response parameter of the gateway's step outputs (packages/gateway/src/operators/operator-runner.ts). */
export const STEP_OUTPUTS_PARAMETER = "operon_step_outputs";

type OperatorWithRelations = Operator & {
  owner?: { id: string; email: string } | null;
  versions?: Array<{ version: number; createdAt: Date; createdBy: { id: string; email: string } | null }>;
};

export class OperatorRegistry {
  private readonly lock: KeyedLock;

  constructor(
    private readonly prisma: PrismaClient,
    private readonly gateway: GatewayClient,
    private readonly logger: Logger,
    /** The database's locks: changes of one operator wait for each other in every control plane on it. */
    locks: AdvisoryLocks,
    /** Told of each registration and new version once stored (automatic perf reports); optional. */
    private readonly onChange?: TargetChangeListener,
  ) {
    this.lock = new KeyedLock(locks, "operator");
  }

  /** Stored operators, then served ones not stored here (repository ensembles, direct registrations). */
  async list(): Promise<OperatorSummary[]> {
    const rows = await this.prisma.operator.findMany({
      include: { owner: { select: { id: true, email: true } } },
      orderBy: { name: "asc" },
    });
    const served = await this.servedOperators();
    const summaries = rows.map((row) => summarize(row, served));
    const stored = new Set(rows.map((row) => row.name));
    for (const operator of latestByName(served ?? [])) {
      if (!stored.has(operator.name)) summaries.push(summarizeServed(operator));
    }
    return summaries;
  }

  async get(name: string): Promise<OperatorDetail> {
    const row = await this.prisma.operator.findUnique({
      where: { name },
      include: {
        owner: { select: { id: true, email: true } },
        versions: {
          orderBy: { version: "desc" },
          select: { version: true, createdAt: true, createdBy: { select: { id: true, email: true } } },
        },
      },
    });
    const served = await this.servedOperators();
    if (row !== null) return detail(row, served);
    const gatewayOnly = latestByName(served ?? []).find((operator) => operator.name === name);
    if (gatewayOnly === undefined) throw notFound(`operator '${name}'`);
    return { ...summarizeServed(gatewayOnly), spec: gatewayOnly.spec, versions: [] };
  }

  async versions(name: string): Promise<OperatorVersionSummary[]> {
    const row = await this.prisma.operator.findUnique({
      where: { name },
      include: {
        versions: { orderBy: { version: "desc" }, include: { createdBy: { select: { id: true, email: true } } } },
      },
    });
    if (row === null) throw notFound(`operator '${name}'`);
    return row.versions.map((version) => ({
      version: version.version,
      spec: specObject(version.spec),
      createdAt: version.createdAt,
      createdBy: version.createdBy,
    }));
  }

  /** The gateway's dry run; never changes anything. */
  async validate(name: string, spec: Record<string, unknown>): Promise<OperatorValidation> {
    return this.gateway.validateOperator(name, withName(name, spec));
  }

  async create(
    actor: Actor,
    input: { name: string; description?: string | undefined; spec: Record<string, unknown> },
  ): Promise<OperatorDetail> {
    const spec = withName(input.name, input.spec);
    return this.lock.run(input.name, async () => {
      if ((await this.prisma.operator.count({ where: { name: input.name } })) > 0) {
        throw new AppError(
          "CONFLICT",
          `an operator named '${input.name}' already exists; update it to make a new version`,
          {
            fieldErrors: [{ path: "name", message: "already in use" }],
          },
        );
      }
      await this.assertValid(input.name, spec);
      await this.gateway.registerOperator(input.name, spec);
      try {
        await this.prisma.$transaction(async (tx) => {
          const operator = await tx.operator.create({
            data: {
              name: input.name,
              description: input.description ?? null,
              ownerId: actor.userId,
              spec: spec as Prisma.InputJsonObject,
              latestVersion: 1,
            },
          });
          await tx.operatorVersion.create({
            data: {
              operatorId: operator.id,
              version: 1,
              spec: spec as Prisma.InputJsonObject,
              createdById: actor.userId,
            },
          });
          await recordAudit(tx, actor, {
            action: "operator.create",
            targetType: "Operator",
            targetId: operator.id,
            after: { name: operator.name, description: operator.description, version: 1, spec },
          });
        });
      } catch (error) {
        await this.undo(`unregister operator '${input.name}' after its database write failed`, () =>
          this.gateway.unregisterOperator(input.name),
        );
        if (isUniqueViolation(error))
          throw new AppError("CONFLICT", `an operator named '${input.name}' already exists`, { cause: error });
        throw error;
      }
      this.onChange?.({ kind: "OPERATOR", name: input.name, version: "1", action: "operator.create" });
      return this.get(input.name);
    });
  }

  /** Stores the spec as a new version and serves it; the description changes only when given. */
  async update(
    actor: Actor,
    input: { name: string; description?: string | undefined; spec: Record<string, unknown> },
  ): Promise<OperatorDetail> {
    const spec = withName(input.name, input.spec);
    return this.lock.run(input.name, async () => {
      const before = await this.prisma.operator.findUnique({ where: { name: input.name } });
      if (before === null) throw notFound(`operator '${input.name}'`);
      await this.assertValid(input.name, spec);
      await this.gateway.registerOperator(input.name, spec);
      let stored = 0;
      try {
        await this.prisma.$transaction(async (tx) => {
          const current = await tx.operator.findUniqueOrThrow({ where: { id: before.id } });
          const version = current.latestVersion + 1;
          const after = await tx.operator.update({
            where: { id: before.id },
            data: {
              spec: spec as Prisma.InputJsonObject,
              latestVersion: version,
              ...(input.description !== undefined ? { description: input.description } : {}),
            },
          });
          await tx.operatorVersion.create({
            data: { operatorId: before.id, version, spec: spec as Prisma.InputJsonObject, createdById: actor.userId },
          });
          stored = version;
          await recordAudit(tx, actor, {
            action: "operator.update",
            targetType: "Operator",
            targetId: before.id,
            before: { description: current.description, version: current.latestVersion, spec: current.spec },
            after: { description: after.description, version, spec },
          });
        });
      } catch (error) {
        await this.undo(
          `re-register the previous spec of operator '${input.name}' after its database write failed`,
          () => this.gateway.registerOperator(input.name, specObject(before.spec)),
        );
        throw error;
      }
      this.onChange?.({ kind: "OPERATOR", name: input.name, version: String(stored), action: "operator.update" });
      return this.get(input.name);
    });
  }

  async delete(actor: Actor, name: string): Promise<void> {
    await this.lock.run(name, async () => {
      const before = await this.prisma.operator.findUnique({ where: { name } });
      if (before === null) {
        const served = (await this.servedOperators())?.find((operator) => operator.name === name);
        if (served?.source === "repository") {
          throw new AppError(
            "VALIDATION_FAILED",
            `'${name}' is an ensemble of the model repository; unload it as a model instead`,
          );
        }
        throw notFound(`operator '${name}'`);
      }
      let wasServed = true;
      try {
        await this.gateway.unregisterOperator(name);
      } catch (error) {
        // Not served (the gateway restarted and was not synced yet) or the gateway is down (its operators went with it).
        if (!(error instanceof AppError) || (error.code !== "NOT_FOUND" && error.code !== "GATEWAY_UNAVAILABLE"))
          throw error;
        wasServed = false;
        this.logger.warn({ operator: name, err: error }, "deleting an operator the gateway does not serve");
      }
      try {
        await this.prisma.$transaction(async (tx) => {
          await tx.operator.delete({ where: { id: before.id } });
          await recordAudit(tx, actor, {
            action: "operator.delete",
            targetType: "Operator",
            targetId: before.id,
            before: { name, description: before.description, version: before.latestVersion, spec: before.spec },
          });
        });
      } catch (error) {
        if (wasServed) {
          await this.undo(`re-register operator '${name}' after its deletion failed`, () =>
            this.gateway.registerOperator(name, specObject(before.spec)),
          );
        }
        throw error;
      }
      this.onChange?.({ kind: "OPERATOR", name, action: "operator.delete" });
    });
  }

  /**
   * One inference through a served operator with the gateway's step timings
   * and step outputs, joined per step. The gateway's own errors (bad inputs,
   * a failing step) keep their message.
   */
  async tryRun(
    name: string,
    tensors: TryInputTensor[],
    parameters: Record<string, string | number | boolean> = {},
  ): Promise<TryRunResult> {
    // Files picked for BYTES inputs (an image pipeline's PNG) travel as Triton binary data, as on a model's Try it.
    const { inputs, binaries } = gatewayInputsOf(tensors);
    const request = {
      inputs,
      parameters: { ...parameters, [STEP_TIMINGS_PARAMETER]: true, [STEP_OUTPUTS_PARAMETER]: true },
    };
    const response =
      binaries.length > 0
        ? await this.gateway.inferBinary(name, undefined, request, binaries)
        : await this.gateway.infer(name, undefined, request);
    const body = response.body;
    const responseParameters = (body["parameters"] ?? {}) as Record<string, unknown>;
    const outputsByStep = parseStepOutputs(responseParameters[STEP_OUTPUTS_PARAMETER]);
    return {
      outputs: Array.isArray(body["outputs"]) ? body["outputs"] : [],
      latencyMs: Math.round(response.latencyMs * 1000) / 1000,
      steps: parseStepTimings(responseParameters[STEP_TIMINGS_PARAMETER]).map((step) => ({
        ...step,
        outputs: outputsByStep.get(step.name) ?? [],
      })),
    };
  }

  /**
   * Registers every stored operator with the gateway (its latest version).
   * Operators may call other operators, so a failed one is retried while a
   * round still registers something. Failures are logged and returned, never thrown.
   */
  async syncToGateway(): Promise<{ registered: string[]; failures: SyncFailure[] }> {
    const rows = await this.prisma.operator.findMany({ orderBy: { name: "asc" }, select: { name: true, spec: true } });
    const registered: string[] = [];
    let pending = rows;
    let failures: SyncFailure[] = [];
    for (;;) {
      const failed: typeof rows = [];
      failures = [];
      for (const row of pending) {
        try {
          await this.lock.run(row.name, () => this.gateway.registerOperator(row.name, specObject(row.spec)));
          registered.push(row.name);
        } catch (error) {
          failed.push(row);
          failures.push({ name: row.name, message: (error as Error).message });
        }
      }
      if (failed.length === 0 || failed.length === pending.length) break;
      pending = failed;
    }
    for (const failure of failures)
      this.logger.error(
        { operator: failure.name, err: failure.message },
        "could not register a stored operator with the gateway",
      );
    if (rows.length > 0)
      this.logger.info(
        { registered: registered.length, failed: failures.length },
        "stored operators synced to the gateway",
      );
    return { registered, failures };
  }

  private async assertValid(name: string, spec: Record<string, unknown>): Promise<void> {
    const validation = await this.gateway.validateOperator(name, spec);
    if (validation.valid) return;
    throw new AppError(
      "VALIDATION_FAILED",
      `operator '${name}' is invalid: ${validation.problems.map((problem) => problem.message).join("; ")}`,
      {
        fieldErrors: validation.problems.map(problemField),
      },
    );
  }

  /** The gateway's operators, or undefined when it cannot be asked (its state is then UNKNOWN, the listing still works). */
  private async servedOperators(): Promise<GatewayOperator[] | undefined> {
    try {
      return await this.gateway.listOperators();
    } catch (error) {
      this.logger.warn({ err: error }, "could not list the gateway's operators");
      return undefined;
    }
  }

  /** Best effort: a failed undo is logged for the operator of the platform, and the original error still surfaces. */
  private async undo(what: string, action: () => Promise<unknown>): Promise<void> {
    try {
      await action();
    } catch (error) {
      this.logger.error({ err: error }, `could not ${what}; the gateway and the database disagree until the next sync`);
    }
  }
}

export function problemField(problem: OperatorProblem): FieldError {
  return { path: problem.path !== undefined ? `spec.${problem.path}` : "spec", message: problem.message };
}

/** The spec as registered: its name is the operator's (a different name in the spec is an input mistake). */
function withName(name: string, spec: Record<string, unknown>): Record<string, unknown> {
  if (spec["name"] !== undefined && spec["name"] !== name) {
    throw new AppError(
      "VALIDATION_FAILED",
      `the spec's name ${JSON.stringify(spec["name"])} differs from the operator name '${name}'`,
      {
        fieldErrors: [{ path: "spec.name", message: `must be '${name}' or left out` }],
      },
    );
  }
  return { ...spec, name };
}

function specObject(value: Prisma.JsonValue): Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

/** The gateway lists one entry per served version; the highest is the one requests reach. */
function latestByName(operators: readonly GatewayOperator[]): GatewayOperator[] {
  const latest = new Map<string, GatewayOperator>();
  for (const operator of operators) {
    const seen = latest.get(operator.name);
    if (seen === undefined || Number(operator.version) >= Number(seen.version)) latest.set(operator.name, operator);
  }
  return [...latest.values()];
}

function stateOf(name: string, served: readonly GatewayOperator[] | undefined): OperatorServedState {
  if (served === undefined) return "UNKNOWN";
  const operator = latestByName(served).find((candidate) => candidate.name === name);
  if (operator === undefined) return "NOT_SERVED";
  return (operator.unreadyModels ?? []).length > 0 ? "DEGRADED" : "SERVED";
}

function unreadyModelsOf(name: string, served: readonly GatewayOperator[] | undefined): string[] {
  return latestByName(served ?? []).find((candidate) => candidate.name === name)?.unreadyModels ?? [];
}

function breakersOf(name: string, served: readonly GatewayOperator[] | undefined): StepBreaker[] {
  return latestByName(served ?? []).find((candidate) => candidate.name === name)?.breakers ?? [];
}

function summarize(row: OperatorWithRelations, served: readonly GatewayOperator[] | undefined): OperatorSummary {
  const spec = specObject(row.spec);
  return {
    name: row.name,
    description: row.description,
    source: "api",
    stored: true,
    latestVersion: row.latestVersion,
    state: stateOf(row.name, served),
    unreadyModels: unreadyModelsOf(row.name, served),
    breakers: breakersOf(row.name, served),
    models: specModels(spec),
    stepCount: specSteps(spec).length,
    owner: row.owner ?? null,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}

function detail(row: OperatorWithRelations, served: readonly GatewayOperator[] | undefined): OperatorDetail {
  return {
    ...summarize(row, served),
    spec: specObject(row.spec),
    versions: (row.versions ?? []).map((version) => ({
      version: version.version,
      createdAt: version.createdAt,
      createdBy: version.createdBy,
    })),
  };
}

function summarizeServed(operator: GatewayOperator): OperatorSummary {
  const description = operator.spec["description"];
  return {
    name: operator.name,
    description: typeof description === "string" ? description : null,
    source: operator.source,
    stored: false,
    latestVersion: null,
    state: (operator.unreadyModels ?? []).length > 0 ? "DEGRADED" : "SERVED",
    unreadyModels: operator.unreadyModels ?? [],
    breakers: operator.breakers ?? [],
    models: specModels(operator.spec),
    stepCount: specSteps(operator.spec).length,
    owner: null,
    createdAt: null,
    updatedAt: null,
  };
}

/** A JSON-array response parameter as a list of objects; anything else (absent, malformed) as none. */
function jsonObjects(raw: unknown): Array<Record<string, unknown>> {
  let list: unknown = raw;
  if (typeof raw === "string") {
    try {
      list = JSON.parse(raw);
    } catch {
      return [];
    }
  }
  return Array.isArray(list)
    ? list.filter((item): item is Record<string, unknown> => typeof item === "object" && item !== null)
    : [];
}

/**
 * The gateway's `operon_step_outputs` (a JSON array of {step, outputs: [{name,
 * datatype, shape, data, truncated?}]}) by step name. A gateway that sent
 * none (or an older one) leaves every step without outputs rather than failing the run.
 */
export function parseStepOutputs(raw: unknown): Map<string, StepOutputTensor[]> {
  const byStep = new Map<string, StepOutputTensor[]>();
  for (const entry of jsonObjects(raw)) {
    const outputs = jsonObjects(entry["outputs"]).map((tensor) => ({
      name: String(tensor["name"] ?? ""),
      datatype: String(tensor["datatype"] ?? ""),
      shape: Array.isArray(tensor["shape"])
        ? tensor["shape"].filter((dim): dim is number => typeof dim === "number")
        : [],
      data: Array.isArray(tensor["data"]) ? (tensor["data"] as unknown[]) : [],
      truncated: tensor["truncated"] === true,
    }));
    byStep.set(String(entry["step"] ?? ""), outputs);
  }
  return byStep;
}

/** The gateway's `operon_step_timings` (a JSON array of {step, kind, model?, status, startMs?, durationMs?}) in microseconds, without outputs. */
export function parseStepTimings(raw: unknown): Array<Omit<TryRunStep, "outputs">> {
  const us = (ms: unknown): number | null =>
    typeof ms === "number" && Number.isFinite(ms) ? Math.round(ms * 1000) : null;
  return jsonObjects(raw).map((item) => {
    const startUs = us(item["startMs"]);
    const durationUs = us(item["durationMs"]);
    return {
      name: String(item["step"] ?? ""),
      kind: String(item["kind"] ?? ""),
      model: typeof item["model"] === "string" ? item["model"] : null,
      status: String(item["status"] ?? ""),
      startUs,
      endUs: startUs !== null && durationUs !== null ? startUs + durationUs : null,
      durationUs,
    };
  });
}
