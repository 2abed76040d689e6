import { OperonError } from "@operon/protocol/errors";
import { setTimeout as sleep } from "node:timers/promises";
import { readProcessUsage } from "../observability/process-usage.js";
import type { BackendInstance } from "./backend-instance.js";
import { type InstanceLaunchSpec, type ModelInstancesOptions, launchInstance } from "./instance-launch.js";

/** One instance of a pool (model-instances.ts): its worker now and what the pool and its supervisor know of it. */
export interface PoolInstance {
  name: string;
  worker: BackendInstance | undefined;
  /** Unexpected exits (each followed by a restart attempt) since the version was loaded. */
  restarts: number;
  /** Reservations: executions (or streams whose execute has not returned) sent to the worker. */
  inFlight: number;
  /** BLS depth of each request the worker holds, by a token of this pool. */
  depths: Map<number, number>;
  restarting: boolean;
  failedRestarts: number;
  gaveUp: boolean;
  /** Taken out of the pool by resize(): finishes what it holds, is then stopped and never restarted. */
  retiring?: boolean;
  /** Over its memory cap: gets no new work, finishes what it holds, then a fresh worker replaces it. */
  recycling?: boolean;
  /** A memory read of its worker is under way; `recheck`: another execution ended meanwhile. */
  memoryCheck?: { recheck: boolean };
}

/** What the supervisor reads of its pool and asks of it (model-instances.ts gives these). */
export interface SupervisedPool {
  /** The launch spec now (a resize may change the config). */
  spec(): InstanceLaunchSpec;
  /** The pool has stopped (its drain ended). */
  stopped(): boolean;
  /** No worker that exits from now on is started again (stop() began, or haltRestarts()). */
  restartsHalted(): boolean;
  /** No instance is alive and none will come back. */
  isDead(): boolean;
  /** Puts a fresh worker in the instance's place. */
  adopt(name: string, worker: BackendInstance): void;
  /** Publishes the live-worker gauge. */
  publishUp(): void;
  /** An instance may take work again: the scheduler may dispatch. */
  capacityChanged(): void;
  /** Fails every request waiting in the pool's queue. */
  failQueued(error: OperonError): void;
}

/**
 * Keeps a pool's workers running, the pool's second concern beside
 * dispatching requests to them: a worker that exited unexpectedly is counted,
 * logged and restarted with backoff (giving up after maxRestartFailures
 * failed starts in a row), and a worker over its resident-memory cap
 * (worker-memory-cap.ts) is recycled between requests.
 */
export class InstanceSupervisor {
  constructor(
    private readonly pool: SupervisedPool,
    private readonly options: ModelInstancesOptions,
    private readonly labels: { model: string; version: string },
    /** The resident-memory cap of each worker process; undefined = none. */
    private readonly memoryLimitBytes: number | undefined,
  ) {}

  /** A worker exited unexpectedly (the pool has already let go of it): counted, logged, restarted. */
  crashed(instance: PoolInstance, worker: BackendInstance, info: { code: number | null; signal: string | null }): void {
    instance.restarts += 1;
    this.options.metrics.workerRestarts.inc({ ...this.labels, instance: instance.name });
    this.options.logger.error(
      {
        model: this.pool.spec().model,
        version: this.pool.spec().version,
        instance: instance.name,
        pid: worker.pid,
        code: info.code,
        signal: info.signal,
      },
      "backend worker exited unexpectedly; restarting it",
    );
    void this.restart(instance);
  }

  private async restart(instance: PoolInstance): Promise<void> {
    const maxFailures = this.options.maxRestartFailures ?? 5;
    instance.restarting = true;
    while (
      !this.pool.stopped() &&
      !this.pool.restartsHalted() &&
      instance.retiring !== true &&
      instance.worker === undefined
    ) {
      const backoffMs = Math.min(5000, 100 * 2 ** instance.failedRestarts);
      if (instance.failedRestarts > 0) await sleep(backoffMs);
      if (this.pool.stopped() || this.pool.restartsHalted()) break;
      try {
        const { worker } = await launchInstance(this.pool.spec(), instance.name, this.options);
        if (this.pool.stopped() || this.pool.restartsHalted() || (instance.retiring as boolean | undefined) === true) {
          await worker.stop(1000);
          break;
        }
        instance.failedRestarts = 0;
        this.pool.adopt(instance.name, worker);
        this.options.logger.info(
          { model: this.pool.spec().model, instance: instance.name, pid: worker.pid },
          "backend worker restarted",
        );
        this.pool.publishUp();
        this.pool.capacityChanged();
      } catch (error) {
        instance.failedRestarts += 1;
        this.options.logger.error(
          {
            model: this.pool.spec().model,
            instance: instance.name,
            attempt: instance.failedRestarts,
            err: (error as Error).message,
          },
          "restarting backend worker failed",
        );
        if (instance.failedRestarts >= maxFailures) {
          instance.gaveUp = true;
          break;
        }
      }
    }
    instance.restarting = false;
    if (this.pool.isDead()) {
      this.pool.failQueued(
        new OperonError(
          "UNAVAILABLE",
          `model '${this.pool.spec().model}' version ${this.pool.spec().version} has no running instance: its workers keep failing to start`,
        ),
      );
    }
    this.pool.capacityChanged();
  }

  /**
   * After an execution: reads the worker's resident memory (one read at a
   * time per worker; an execution ending meanwhile asks for one more) and
   * starts a recycle when it is over the cap.
   */
  checkMemory(instance: PoolInstance, worker: BackendInstance): void {
    if (this.memoryLimitBytes === undefined) return;
    if (instance.recycling === true || worker.pid === undefined) return;
    if (instance.memoryCheck !== undefined) {
      instance.memoryCheck.recheck = true;
      return;
    }
    const check = { recheck: false };
    instance.memoryCheck = check;
    void readProcessUsage(worker.pid).then(({ rssBytes }) => {
      instance.memoryCheck = undefined;
      const limit = this.memoryLimitBytes!;
      if (instance.worker !== worker || this.pool.stopped() || this.pool.restartsHalted() || instance.retiring === true)
        return;
      if (rssBytes !== null && rssBytes > limit) void this.recycle(instance, worker, rssBytes);
      else if (check.recheck) this.checkMemory(instance, worker);
    });
  }

  /**
   * Replaces a worker over its memory cap between requests: no new work
   * reaches it, it finishes what it holds, it is stopped (an expected exit,
   * not counted as a restart), and a fresh worker takes its place; requests
   * wait in the queue or go to the other instances meanwhile. A fresh
   * worker that fails to start is retried as after a crash.
   */
  private async recycle(instance: PoolInstance, worker: BackendInstance, rssBytes: number): Promise<void> {
    instance.recycling = true;
    const mb = (bytes: number): number => Math.round(bytes / (1024 * 1024));
    this.options.metrics.workerRecycles.inc({ ...this.labels, instance: instance.name });
    this.options.logger.warn(
      {
        model: this.pool.spec().model,
        version: this.pool.spec().version,
        instance: instance.name,
        pid: worker.pid,
        rssMb: mb(rssBytes),
        limitMb: mb(this.memoryLimitBytes!),
      },
      "backend worker is over its memory cap; recycling it between requests",
    );
    while (instance.worker === worker && instance.inFlight > 0 && !this.pool.stopped()) await sleep(5);
    if (instance.worker !== worker || this.pool.stopped() || this.pool.restartsHalted() || instance.retiring === true) {
      instance.recycling = false;
      return;
    }
    // From here its exit is ours: the exit handler ignores a worker the instance no longer holds.
    instance.worker = undefined;
    instance.depths.clear();
    this.pool.publishUp();
    await worker.stop(5000);
    instance.recycling = false;
    await this.restart(instance);
  }
}
