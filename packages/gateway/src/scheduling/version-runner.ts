import type { Parameters } from "@operon/protocol/tensor";
import type { ExecutionTiming } from "../observability/model-stats.js";
import type { ScheduledRequest, ScheduledResult, StreamedResponse } from "./request-scheduler.js";
import type { SchedulerPolicy } from "./scheduler-policy.js";

/**
 * What serves the requests of one model version, behind the engine: the
 * backend instances with their scheduler (ModelInstances) or an operator's
 * DAG executor (OperatorRunner). The engine validates a request against the
 * version's signature, then hands it to `execute`, whatever the runner is.
 *
 * Ownership rule (the scheduler contract): when `execute` returns a promise,
 * the runner owns the request and settles it exactly once; when it throws,
 * the caller still owns it. `stop` is idempotent and drains in-flight work.
 */
export interface RunnerRequest extends ScheduledRequest {
  /** The request's parameters (operators read them in routes and pass them to their steps). */
  parameters?: Parameters;
}

/**
 * Exactly what its callers use: the engine (policy, execute, executeStream)
 * and the model manager (isDead, onExecution, stop, haltRestarts). A
 * runner's queue depth is its own business (ModelInstances and
 * OperatorRunner each report theirs where it is read), not the interface's.
 */
export interface VersionRunner {
  /** Queueing rules the engine reads before execute (priority level, queue timeout). */
  readonly policy: SchedulerPolicy;
  /** True when the version can never serve again (e.g. every worker gave up restarting). */
  readonly isDead: boolean;
  /** Called after each execution (statistics: execution_count, batch_stats). */
  onExecution: (batchSize: number, timing: ExecutionTiming) => void;
  execute(request: RunnerRequest): Promise<ScheduledResult>;
  /**
   * Present on runners that stream a decoupled model's responses
   * (ModelInstances): responses go to onResponse, exactly one final, and the
   * promise settles after it; ownership as for execute.
   */
  executeStream?(request: RunnerRequest, onResponse: (response: StreamedResponse) => void): Promise<ScheduledResult>;
  stop(timeoutMs?: number): Promise<void>;
  /** Present on runners with workers: a shutdown begins, workers that exit from now on stay down. */
  haltRestarts?(): void;
}
