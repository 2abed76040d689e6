import { setTimeout as sleep } from "node:timers/promises";
import { LatencyRecorder, percentileOfSorted } from "./latency-stats.js";
import { messageOf } from "./perf-error.js";
import type { RequestDistribution } from "./perf-report.js";

/**
 * Drives load at one setting and measures it in windows, the way
 * perf_analyzer does:
 *
 * - concurrency N: N closed loops, each sending its next request as soon as
 *   the previous one answers, so exactly N requests are in flight;
 * - request rate R: an open loop that sends on a schedule (constant 1/R
 *   intervals, or exponential ones for a Poisson process) whatever the
 *   answers do; latency runs from the actual send.
 *
 * Time-window mode measures consecutive windows of measurementIntervalMs
 * until the last STABILITY_WINDOWS agree on throughput and average latency
 * within stabilityPercentage, or maxTrials windows have run; the step's
 * figures are then those of the last STABILITY_WINDOWS windows merged.
 * Request-count mode sends exactly requestCount requests as one window.
 * A request counts in the window in which its answer arrives.
 */

export type LoadSetting =
  | { kind: "concurrency"; concurrency: number }
  | { kind: "request-rate"; requestRate: number; distribution: RequestDistribution };

export interface MeasurementPolicy {
  measurementIntervalMs: number;
  stabilityPercentage: number;
  maxTrials: number;
  /** Request-count mode when set. */
  requestCount?: number;
  /** Inferences per request, for throughput in infer/sec. */
  batchSize: number;
  /** perf_analyzer's --percentile: stability is judged on this latency percentile instead of the average. */
  percentile?: number;
}

export interface WindowMeasurement<S> {
  durationMs: number;
  /** Successful requests answered in the window. */
  requests: number;
  errors: number;
  latencies: LatencyRecorder;
  /** Server statistics snapshots bracketing the window, when a probe is given. */
  serverBefore: S | undefined;
  serverAfter: S | undefined;
}

export interface StepMeasurement<S> {
  windows: Array<WindowMeasurement<S>>;
  /** Index of the first window merged into the step's figures (the rest follow it). */
  mergedFrom: number;
  stable: boolean;
  /** Up to MAX_ERROR_SAMPLES distinct error messages. */
  errorSamples: string[];
  /** The signal fired: the step is incomplete (its partial window is dropped). */
  aborted: boolean;
}

export interface StepObserver<S> {
  /** Read at every window boundary (server statistics); undefined = not available. */
  snapshot?: () => Promise<S | undefined>;
  /** After every window, with whether the step is now stable. */
  onWindow?: (window: WindowMeasurement<S>, index: number, stable: boolean) => void;
  signal?: AbortSignal;
  /** Source of the Poisson intervals (tests seed it). */
  random?: () => number;
}

export const STABILITY_WINDOWS = 3;
export const MAX_ERROR_SAMPLES = 5;

export interface WindowFigures {
  throughputInferPerSec: number;
  avgLatencyUs: number;
  /** The latency stability is judged on: the --percentile one when given, else the average. */
  stabilityLatencyUs?: number;
}

export function windowFigures(
  window: { requests: number; durationMs: number; latencies: LatencyRecorder },
  batchSize: number,
  percentile?: number,
): WindowFigures {
  const seconds = window.durationMs / 1000;
  const avgLatencyUs = window.latencies.mean();
  return {
    throughputInferPerSec: seconds > 0 ? (window.requests * batchSize) / seconds : 0,
    avgLatencyUs,
    stabilityLatencyUs:
      percentile === undefined
        ? avgLatencyUs
        : percentileOfSorted(Float64Array.from(window.latencies.view()).sort(), percentile),
  };
}

/**
 * perf_analyzer's stability rule: over the last `count` windows, every
 * window's throughput and average latency lie within ±percentage% of
 * those windows' mean. A window without answers is never stable.
 */
export function isStable(windows: readonly WindowFigures[], percentage: number, count = STABILITY_WINDOWS): boolean {
  if (windows.length < count) return false;
  const last = windows.slice(-count);
  for (const pick of [
    (w: WindowFigures) => w.throughputInferPerSec,
    (w: WindowFigures) => w.stabilityLatencyUs ?? w.avgLatencyUs,
  ]) {
    const values = last.map(pick);
    const mean = values.reduce((sum, value) => sum + value, 0) / values.length;
    if (!(mean > 0)) return false;
    if (values.some((value) => Math.abs(value - mean) > (mean * percentage) / 100)) return false;
  }
  return true;
}

/** Milliseconds between sends at `rate` per second: constant, or exponential (Poisson arrivals). */
export function intervalSource(
  rate: number,
  distribution: RequestDistribution,
  random: () => number = Math.random,
): () => number {
  const meanMs = 1000 / rate;
  if (distribution === "constant") return () => meanMs;
  return () => -Math.log(1 - random()) * meanMs;
}

export async function measureStep<S>(
  infer: () => Promise<void>,
  load: LoadSetting,
  policy: MeasurementPolicy,
  observer: StepObserver<S> = {},
): Promise<StepMeasurement<S>> {
  const sink = new Sink();
  return policy.requestCount !== undefined
    ? measureRequestCount(infer, load, policy.requestCount, sink, observer)
    : measureWindows(infer, load, policy, sink, observer);
}

async function measureWindows<S>(
  infer: () => Promise<void>,
  load: LoadSetting,
  policy: MeasurementPolicy,
  sink: Sink,
  observer: StepObserver<S>,
): Promise<StepMeasurement<S>> {
  const { signal } = observer;
  const windows: Array<WindowMeasurement<S>> = [];
  const figures: WindowFigures[] = [];
  let stable = false;
  let aborted = false;
  const driver = startLoad(infer, load, sink, undefined, observer.random);
  try {
    let before = await observer.snapshot?.();
    for (let trial = 0; trial < policy.maxTrials; trial += 1) {
      const window = sink.open();
      const started = performance.now();
      try {
        await sleep(policy.measurementIntervalMs, undefined, signal ? { signal } : undefined);
      } catch {
        aborted = true;
        break;
      }
      const durationMs = performance.now() - started;
      sink.close();
      const after = await observer.snapshot?.();
      const measured: WindowMeasurement<S> = { ...window, durationMs, serverBefore: before, serverAfter: after };
      before = after;
      windows.push(measured);
      figures.push(windowFigures(measured, policy.batchSize, policy.percentile));
      stable = isStable(figures, policy.stabilityPercentage);
      observer.onWindow?.(measured, windows.length - 1, stable);
      if (stable) break;
    }
  } finally {
    sink.close();
    driver.stop();
    await driver.drained;
  }
  return {
    windows,
    mergedFrom: Math.max(0, windows.length - STABILITY_WINDOWS),
    stable,
    errorSamples: [...sink.errorSamples],
    aborted: aborted || signal?.aborted === true,
  };
}

async function measureRequestCount<S>(
  infer: () => Promise<void>,
  load: LoadSetting,
  requestCount: number,
  sink: Sink,
  observer: StepObserver<S>,
): Promise<StepMeasurement<S>> {
  const before = await observer.snapshot?.();
  const window = sink.open();
  const started = performance.now();
  const driver = startLoad(infer, load, sink, requestCount, observer.random);
  const stop = (): void => driver.stop();
  observer.signal?.addEventListener("abort", stop, { once: true });
  try {
    await driver.drained;
  } finally {
    observer.signal?.removeEventListener("abort", stop);
  }
  const durationMs = performance.now() - started;
  sink.close();
  const aborted = observer.signal?.aborted === true;
  const windows: Array<WindowMeasurement<S>> = [];
  if (!aborted) {
    const after = await observer.snapshot?.();
    const measured: WindowMeasurement<S> = { ...window, durationMs, serverBefore: before, serverAfter: after };
    windows.push(measured);
    observer.onWindow?.(measured, 0, true);
  }
  return { windows, mergedFrom: 0, stable: !aborted, errorSamples: [...sink.errorSamples], aborted };
}

// ---- recording ----

interface OpenWindow {
  requests: number;
  errors: number;
  latencies: LatencyRecorder;
}

/** Where answers are counted: the open window, or nowhere between windows. */
class Sink {
  private current: OpenWindow | undefined;
  readonly errorSamples = new Set<string>();

  open(): OpenWindow {
    this.current = { requests: 0, errors: 0, latencies: new LatencyRecorder() };
    return this.current;
  }

  close(): void {
    this.current = undefined;
  }

  success(latencyUs: number): void {
    const window = this.current;
    if (window === undefined) return;
    window.requests += 1;
    window.latencies.record(latencyUs);
  }

  failure(error: unknown): void {
    if (this.current !== undefined) this.current.errors += 1;
    if (this.errorSamples.size < MAX_ERROR_SAMPLES) this.errorSamples.add(messageOf(error));
  }
}

// ---- load drivers ----

interface LoadDriver {
  /** Stops sending; requests in flight still complete. */
  stop(): void;
  /** Resolves once sending has stopped (stop() or the request limit) and nothing is in flight. */
  drained: Promise<void>;
}

function startLoad(
  infer: () => Promise<void>,
  load: LoadSetting,
  sink: Sink,
  limit: number | undefined,
  random?: () => number,
): LoadDriver {
  return load.kind === "concurrency"
    ? startConcurrency(infer, load.concurrency, sink, limit)
    : startRequestRate(infer, intervalSource(load.requestRate, load.distribution, random), sink, limit);
}

function startConcurrency(
  infer: () => Promise<void>,
  concurrency: number,
  sink: Sink,
  limit: number | undefined,
): LoadDriver {
  let stopped = false;
  let issued = 0;
  const worker = async (): Promise<void> => {
    while (!stopped && (limit === undefined || issued < limit)) {
      issued += 1;
      const started = performance.now();
      try {
        await infer();
        sink.success((performance.now() - started) * 1000);
      } catch (error) {
        sink.failure(error);
        // A client that fails without I/O would otherwise spin on microtasks and starve the window timer.
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    }
  };
  const drained = Promise.all(Array.from({ length: concurrency }, worker)).then(() => undefined);
  return { stop: () => void (stopped = true), drained };
}

/** Longest sleep of the scheduler, so that stop() takes effect quickly at low rates. */
const MAX_SCHEDULER_SLEEP_MS = 50;

function startRequestRate(
  infer: () => Promise<void>,
  nextIntervalMs: () => number,
  sink: Sink,
  limit: number | undefined,
): LoadDriver {
  let stopped = false;
  let issued = 0;
  let inFlight = 0;
  let onIdle: (() => void) | undefined;
  const send = (): void => {
    issued += 1;
    inFlight += 1;
    const started = performance.now();
    infer()
      .then(
        () => sink.success((performance.now() - started) * 1000),
        (error: unknown) => sink.failure(error),
      )
      .finally(() => {
        inFlight -= 1;
        if (inFlight === 0) onIdle?.();
      });
  };
  const schedule = async (): Promise<void> => {
    // Due times are absolute, so timer lateness does not lower the rate: overdue sends go out at once.
    let due = performance.now();
    while (!stopped && (limit === undefined || issued < limit)) {
      const now = performance.now();
      if (due <= now) {
        send();
        due += nextIntervalMs();
        continue;
      }
      await sleep(Math.min(due - now, MAX_SCHEDULER_SLEEP_MS));
    }
    while (inFlight > 0) await new Promise<void>((resolve) => (onIdle = resolve));
  };
  return { stop: () => void (stopped = true), drained: schedule() };
}
