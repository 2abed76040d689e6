/**
 * A change to what the gateway serves that the platform reacts to (today:
 * automatic perf reports, services/perf/perf-runs.ts requestAutomatic).
 * Services that make such changes take an optional listener and call it
 * once the change has succeeded and is stored; the listener must return at
 * once and never throw (it starts background work).
 */
export interface TargetChange {
  kind: "MODEL" | "OPERATOR";
  name: string;
  /** The version the change made (a model version number, an operator's registry version); undefined = the served default. */
  version?: string | undefined;
  /** The audit action of the change: "model.upload", "model.version", "model.updateConfig", "model.delete", "operator.create", "operator.update", "operator.delete". */
  action: string;
}

export type TargetChangeListener = (change: TargetChange) => void;
