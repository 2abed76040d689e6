import { OperonError, asOperonError } from "@operon/protocol/errors";
import type { GatewayMetrics } from "../observability/metrics.js";
import type { ServedModelSignature } from "../signature/model-signature.js";
import type { OperatorHooks } from "./operator-validation.js";
import type { RunModel } from "./dag-executor.js";
import { OperatorRunner } from "./operator-runner.js";
import type { BreakerState } from "./circuit-breaker.js";
import type { OperatorSpec } from "@operon/operator-spec/operator-spec-schema";
import { parseOperatorSpec } from "@operon/operator-spec/parse-operator-spec";
import { validateOperator } from "./operator-validation.js";
import type { OperatorProblem } from "@operon/protocol/admin";

/**
 * The operator registry: operators registered through /v2/operators and the
 * ensembles of the model repository. It owns the rules (explicit mode only,
 * a name of its own, steps valid against the served models, no call to
 * itself), builds their runners, and lists them; the model table it is given
 * (the model manager) owns the served versions and their load/unload order.
 *
 * An operator serves as version 1 of a model of its name.
 */

/** A served operator, as GET /v2/operators lists it. */
export interface ServedOperator {
  name: string;
  version: string;
  /** "api": registered through POST /v2/operators; "repository": a Triton ensemble of the model repository. */
  source: "api" | "repository";
  spec: OperatorSpec;
  /** Step models that cannot serve now (set by the model manager's listing); non-empty = degraded. */
  unreadyModels?: string[];
  /** Each step's circuit breaker state now (steps with a `circuitBreaker` only). */
  breakers: Array<{ step: string; state: BreakerState }>;
}

/** A served operator version, as the model table reports it. */
export interface OperatorVersion {
  name: string;
  version: string;
  /** True for an operator registered through the API (false: an ensemble of the repository). */
  registered: boolean;
  spec: OperatorSpec;
  /** Its steps' circuit breaker states now (OperatorRunner.breakers). */
  breakers: Array<{ step: string; state: BreakerState }>;
}

/** What the registry needs of the model table it registers operators into. */
export interface OperatorModelTable {
  isStopped(): boolean;
  /** Throws UNSUPPORTED unless the model control mode allows changing what is served. */
  assertExplicitMode(action: string, subject: string): void;
  /** The signature of the version that would serve a request now; undefined when none would. */
  signatureOf(model: string, version: string | undefined): ServedModelSignature | undefined;
  /** The one GPU on which the version serving now may keep tensors for an operator's next step (device-placement.ts); undefined = none. */
  deviceOf(model: string, version: string | undefined): number | undefined;
  /** Whether the name is taken by a model of the model repository (loaded or not, not a registered operator). */
  isModelName(name: string): Promise<boolean>;
  /** Whether an operator of this name is registered through the API. */
  isRegisteredOperator(name: string): boolean;
  /** Whether the table has an entry of this name at all (for NOT_FOUND messages). */
  isKnown(name: string): boolean;
  /** The operator specs every served version of a model runs (none for a plain model). */
  operatorSpecsOf(model: string): OperatorSpec[];
  /** Every served operator version, by name then version. */
  operatorVersions(): OperatorVersion[];
  /**
   * Binds to the model entry of `name` as it is now (so a registration queues
   * behind an unregister already under way); the function returned serves the
   * runner as version 1 of that model, replacing and retiring what served.
   */
  operatorSlot(name: string): (spec: OperatorSpec, runner: OperatorRunner) => Promise<void>;
  /** Stops serving a registered operator (drains its requests first). */
  removeOperator(name: string): Promise<void>;
}

export interface OperatorRegistryOptions {
  metrics: GatewayMetrics;
}

export class OperatorRegistry {
  /** How operator steps call models: the engine's infer, set by the engine (through the model manager's setStepRunner). */
  private stepRunner: RunModel | undefined;

  constructor(
    private readonly table: OperatorModelTable,
    private readonly options: OperatorRegistryOptions,
  ) {}

  setStepRunner(runModel: RunModel): void {
    this.stepRunner = runModel;
  }

  /**
   * Registers (or replaces) an operator from its JSON spec: explicit mode
   * only, like model load. The spec is checked against the models served
   * now; every problem comes back in one INVALID_ARG. The operator serves as
   * version 1 of a model of its name, which must not be a repository model.
   */
  async register(raw: unknown): Promise<ServedOperator> {
    this.table.assertExplicitMode("register", "operator registration");
    if (this.table.isStopped()) throw new OperonError("UNAVAILABLE", "server is shutting down");
    const spec = parseOperatorSpec(raw);
    const serve = this.table.operatorSlot(spec.name);
    await this.assertName(spec);
    const problems = validateOperator(spec, this.hooks().lookup);
    if (problems.length > 0) {
      throw new OperonError(
        "INVALID_ARG",
        `operator '${spec.name}' is invalid: ${problems.map((problem) => problem.message).join("; ")}`,
      );
    }
    const runner = this.createRunner(spec);
    await serve(spec, runner);
    return { name: spec.name, version: "1", source: "api", spec, breakers: runner.breakers };
  }

  /**
   * Dry run of register: the problems each of its checks finds, in its order
   * (control mode, spec shape, name, steps against the served models, calls
   * to itself); empty = it would register. Changes nothing.
   */
  async problems(raw: unknown): Promise<OperatorProblem[]> {
    const problems: OperatorProblem[] = [];
    const attempt = async (check: () => unknown): Promise<boolean> => {
      try {
        await check();
        return true;
      } catch (error) {
        // A refusal before the step checks (not explicit mode, a malformed spec, a reserved name): no code, the gateway's text.
        problems.push({ message: asOperonError(error).message });
        return false;
      }
    };
    await attempt(() => this.table.assertExplicitMode("register", "operator registration"));
    let spec: OperatorSpec | undefined;
    if (!(await attempt(() => (spec = parseOperatorSpec(raw)))) || spec === undefined) return problems;
    const parsed = spec;
    await attempt(() => this.assertName(parsed));
    const stepProblems: OperatorProblem[] = validateOperator(parsed, this.hooks().lookup);
    problems.push(...stepProblems);
    // register reaches the self-call check (in createRunner) only with valid steps.
    if (stepProblems.length === 0) await attempt(() => this.assertNoSelfCall(parsed));
    return problems;
  }

  /** Removes an operator registered through the API (drains its requests first). */
  async unregister(name: string): Promise<void> {
    this.table.assertExplicitMode("unregister", "operator removal");
    if (!this.table.isRegisteredOperator(name)) {
      throw new OperonError(
        "NOT_FOUND",
        `no operator named '${name}' is registered${this.table.isKnown(name) ? " (ensembles of the model repository unload through the model repository API)" : ""}`,
      );
    }
    await this.table.removeOperator(name);
  }

  /** Every served operator version: registered ones and ensembles. */
  list(): ServedOperator[] {
    return this.table.operatorVersions().map(({ name, version, registered, spec, breakers }) => ({
      name,
      version,
      source: registered ? "api" : "repository",
      spec,
      breakers,
    }));
  }

  /** How ensembles (loaded by the model loader) and registered operators are checked against served models and run. */
  hooks(): OperatorHooks {
    return {
      lookup: (model, version) => this.table.signatureOf(model, version),
      createRunner: (spec) => this.createRunner(spec),
    };
  }

  private createRunner(spec: OperatorSpec): OperatorRunner {
    this.assertNoSelfCall(spec);
    return new OperatorRunner(spec, {
      runModel: (model, version, inputs, outputNames, signal, parameters, deviceOutputs) => {
        if (this.stepRunner === undefined)
          throw new OperonError("INTERNAL", "operators cannot run: no engine is attached to the model manager");
        return this.stepRunner(model, version, inputs, outputNames, signal, parameters, deviceOutputs);
      },
      deviceOf: (model, version) => this.table.deviceOf(model, version),
      metrics: this.options.metrics,
    });
  }

  /** An operator needs a name no repository model (served or not) has; ALREADY_EXISTS otherwise. */
  private async assertName(spec: OperatorSpec): Promise<void> {
    if (await this.table.isModelName(spec.name)) {
      throw new OperonError(
        "ALREADY_EXISTS",
        `'${spec.name}' is a model of the model repository; an operator needs a name of its own`,
      );
    }
  }

  /** An operator may call other operators, but never itself (directly or through them). */
  private assertNoSelfCall(spec: OperatorSpec): void {
    const visit = (current: OperatorSpec, path: string[], seen: Set<string>): void => {
      for (const step of current.steps) {
        if (step.kind !== "model") continue;
        // A fallback model is called like the step's own model.
        const called =
          step.fallback !== undefined && "model" in step.fallback ? [step.model, step.fallback.model] : [step.model];
        for (const model of called) {
          const route = [...path, model];
          if (model === spec.name) {
            throw new OperonError(
              "INVALID_ARG",
              `operator '${spec.name}' would call itself: ${route.map((name) => `'${name}'`).join(" -> ")}`,
            );
          }
          if (seen.has(model)) continue;
          seen.add(model);
          for (const operator of this.table.operatorSpecsOf(model)) visit(operator, route, seen);
        }
      }
    };
    visit(spec, [spec.name], new Set());
  }
}
