import type { GateClock, TrafficProbe } from "./headroom-gate.js";

/**
 * Bounds on what one account may ask of the one measuring slot: runs it has
 * queued or running at once (manual runs; automatic ones are the
 * platform's), and any run's total time (its steps measured so far are kept
 * when it is stopped there).
 */
export const PERF_RUN_LIMITS = { maxQueuedPerUser: 3, maxRunSecs: 30 * 60 } as const;

export interface PerfRunsOptions {
  /** Manual runs one user may have queued or running at once; default PERF_RUN_LIMITS.maxQueuedPerUser. */
  maxQueuedPerUser?: number | undefined;
  /** Longest a run measures in all, manual or automatic; default PERF_RUN_LIMITS.maxRunSecs. */
  maxRunSecs?: number | undefined;
  /** Measures the gateway's traffic for the headroom gate (default: its statistics over 1 s). */
  probe?: TrafficProbe | undefined;
  gateClock?: GateClock | undefined;
  /** Pause between headroom checks while the host is busy (default 5 s). */
  headroomRecheckMs?: number | undefined;
  /** Cores the gateway must leave idle before an automatic run starts (default: one, or half of a 1-core host). */
  headroomMinIdleCores?: number | undefined;
}
