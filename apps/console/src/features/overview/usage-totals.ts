import type { CurrentModel } from "./overview-types";

export interface UsageTotals {
  models: number;
  operators: number;
  requests: number;
  errors: number;
  instances: number | null;
  readyInstances: number | null;
  /** Worker processes' resident memory plus the gateway's (which holds every model on its threads). */
  memoryBytes: number | null;
  workerMemoryBytes: number | null;
  gatewayMemoryBytes: number | null;
  /** Share of the host's CPU the models used in their last sample (0..1). */
  cpuUtilization: number | null;
}

function sumKnown(values: Array<number | null>): number | null {
  const known = values.filter((value): value is number => value !== null);
  return known.length > 0 ? known.reduce((total, value) => total + value, 0) : null;
}

/**
 * Totals over the models (operators left out: their requests reach their
 * composing models, which already count them, and they have no workers).
 */
export function usageTotals(entries: readonly CurrentModel[], gatewayRssBytes: number | null = null): UsageTotals {
  const models = entries.filter((entry) => !entry.isOperator);
  return {
    models: new Set(models.map((entry) => entry.model)).size,
    operators: new Set(entries.filter((entry) => entry.isOperator).map((entry) => entry.model)).size,
    requests: models.reduce((total, entry) => total + entry.requests, 0),
    errors: models.reduce((total, entry) => total + entry.errors, 0),
    instances: sumKnown(models.map((entry) => entry.instances)),
    readyInstances: sumKnown(models.map((entry) => entry.readyInstances)),
    memoryBytes: sumKnown([...models.map((entry) => entry.memoryBytes), gatewayRssBytes]),
    workerMemoryBytes: sumKnown(models.map((entry) => entry.memoryBytes)),
    gatewayMemoryBytes: gatewayRssBytes,
    cpuUtilization: sumKnown(models.map((entry) => entry.lastSample?.cpuUtilization ?? null)),
  };
}
