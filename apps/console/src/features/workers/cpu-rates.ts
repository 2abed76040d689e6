"use client";

import { useRef } from "react";

/**
 * CPU use now, from two readings of cumulative CPU seconds: Δ CPU seconds /
 * Δ wall seconds (1.0 = one core busy). A process is followed by key and
 * pid, so a restarted worker starts afresh instead of showing a negative rate.
 */
export function useCpuRates(
  readAtIso: string | undefined,
  processes: ReadonlyArray<{ key: string; pid: number | null; cpuSeconds: number | null }>,
): Map<string, number> {
  const previous = useRef<{
    at: number;
    readings: Map<string, { pid: number | null; cpuSeconds: number | null }>;
  } | null>(null);
  const rates = useRef(new Map<string, number>());
  const at = readAtIso ? Date.parse(readAtIso) : NaN;
  if (Number.isFinite(at) && (previous.current === null || at > previous.current.at)) {
    const next = new Map<string, number>();
    const last = previous.current;
    for (const process of processes) {
      const before = last?.readings.get(process.key);
      const seconds = last ? (at - last.at) / 1000 : 0;
      if (
        before &&
        before.pid === process.pid &&
        before.cpuSeconds !== null &&
        process.cpuSeconds !== null &&
        seconds > 0
      ) {
        next.set(process.key, Math.max(0, (process.cpuSeconds - before.cpuSeconds) / seconds));
      }
    }
    previous.current = {
      at,
      readings: new Map(
        processes.map((process) => [process.key, { pid: process.pid, cpuSeconds: process.cpuSeconds }]),
      ),
    };
    rates.current = next;
  }
  return rates.current;
}

export function formatCores(rate: number | undefined): string {
  return rate === undefined ? "…" : `${(rate * 100).toFixed(rate < 0.1 ? 1 : 0)} %`;
}
