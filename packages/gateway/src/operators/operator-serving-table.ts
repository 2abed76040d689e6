import type { Logger } from "../observability/logger.js";
import type { GatewayMetrics } from "../observability/metrics.js";
import { ModelVersionStats } from "../observability/model-stats.js";
import { signatureFromConfig, type ServedModelSignature } from "../signature/model-signature.js";
import type { OperatorSpec } from "@operon/operator-spec/operator-spec-schema";
import { OperatorRunner } from "./operator-runner.js";
import type { OperatorModelTable, OperatorVersion } from "./operator-registry.js";
import { operatorModelConfig } from "./operator-validation.js";
import type { ModelEntry, ServedModels } from "./served-models.js";

/**
 * The operator registry's view of the served models (OperatorModelTable):
 * an operator registered through /v2/operators serves as version 1 of a
 * model of its name in the same table as the repository's models, queued
 * behind that model's earlier loads and unloads.
 */
export interface OperatorServingTableOptions {
  models: ServedModels;
  metrics: GatewayMetrics;
  logger: Logger;
  isStopped(): boolean;
  assertExplicitMode(action: string, subject: string): void;
  /** The signature of the version that would serve a request now (the manager's resolve); undefined when none would. */
  signatureOf(model: string, version: string | undefined): ServedModelSignature | undefined;
  /** See OperatorModelTable.deviceOf. */
  deviceOf(model: string, version: string | undefined): number | undefined;
  /** Whether the model repositories hold a folder of this name. */
  hasRepositoryFolder(name: string): Promise<boolean>;
}

export function operatorServingTable(options: OperatorServingTableOptions): OperatorModelTable {
  const { models } = options;

  /** Serves a registered operator's runner as version 1 of its model, after the model's earlier loads/unloads. */
  const serveOperator = (entry: ModelEntry, spec: OperatorSpec, runner: OperatorRunner): Promise<void> =>
    models.serialize(entry, async () => {
      const config = operatorModelConfig(spec);
      const stats = entry.versions.get("1")?.stats ?? new ModelVersionStats(spec.name, "1", options.metrics);
      runner.onExecution = (batchSize, timing) => stats.recordExecution(batchSize, timing);
      const retired = [...entry.versions.values()];
      entry.versions = new Map([
        [
          "1",
          {
            model: spec.name,
            version: "1",
            config,
            signature: signatureFromConfig(config),
            instances: runner,
            stats,
            operator: spec,
          },
        ],
      ]);
      entry.registeredOperator = spec;
      entry.loadFailed = false;
      entry.state = "READY";
      entry.reason = "";
      models.set(spec.name, entry); // again: an unregister queued before this one removed it
      options.logger.info(
        { operator: spec.name, steps: spec.steps.length, replaced: retired.length > 0 },
        "operator registered",
      );
      await Promise.all(retired.map((served) => models.retire(served, true)));
    });

  /** Stops serving a registered operator (the registry checked that it is one). */
  const removeOperator = (name: string): Promise<void> => {
    const entry = models.get(name)!;
    return models.serialize(entry, async () => {
      const retired = [...entry.versions.values()];
      entry.versions = new Map();
      if (models.get(name) === entry) models.delete(name);
      await Promise.all(retired.map((served) => models.retire(served, false)));
      options.logger.info({ operator: name }, "operator unregistered");
    });
  };

  return {
    isStopped: () => options.isStopped(),
    assertExplicitMode: (action, subject) => options.assertExplicitMode(action, subject),
    signatureOf: (model, version) => options.signatureOf(model, version),
    deviceOf: (model, version) => options.deviceOf(model, version),
    isModelName: async (name) => {
      const existing = models.get(name);
      return (existing !== undefined && existing.registeredOperator === undefined) || options.hasRepositoryFolder(name);
    },
    isRegisteredOperator: (name) => models.get(name)?.registeredOperator !== undefined,
    isKnown: (name) => models.has(name),
    operatorSpecsOf: (model) =>
      [...(models.get(model)?.versions.values() ?? [])].flatMap((served) =>
        served.operator !== undefined ? [served.operator] : [],
      ),
    operatorVersions: () => {
      const list: OperatorVersion[] = [];
      for (const entry of models.sorted()) {
        for (const served of [...entry.versions.values()].sort((a, b) => Number(a.version) - Number(b.version))) {
          if (served.operator === undefined) continue;
          list.push({
            name: entry.name,
            version: served.version,
            registered: entry.registeredOperator !== undefined,
            spec: served.operator,
            breakers: served.instances instanceof OperatorRunner ? served.instances.breakers : [],
          });
        }
      }
      return list;
    },
    operatorSlot: (name) => {
      const existing = models.get(name);
      return (spec, runner) => serveOperator(existing ?? models.entry(name), spec, runner);
    },
    removeOperator,
  };
}
