/**
 * Evenly spaced axis ticks from 0 to the first round number at or above
 * `max`: a step of 1, 2, 2.5 or 5 × 10^n, the smallest that needs at most
 * `maxTicks` ticks (0, 1K, 2K, 3K, 4K, 5K rather than 0, 1.5K, 3K, 5K).
 * The last tick is the axis' top.
 */
export function niceTicks(max: number, maxTicks = 6): number[] {
  const top = max > 0 && Number.isFinite(max) ? max : 1;
  const intervals = Math.max(1, maxTicks - 1);
  const magnitude = 10 ** Math.floor(Math.log10(top / intervals));
  const step =
    [1, 2, 2.5, 5, 10]
      .map((factor) => factor * magnitude)
      .find((candidate) => Math.ceil(top / candidate - 1e-9) <= intervals) ?? 10 * magnitude;
  const count = Math.ceil(top / step - 1e-9);
  // toPrecision: 3 × 0.1 is 0.30000000000000004 in floating point.
  return Array.from({ length: count + 1 }, (_, index) => Number((index * step).toPrecision(12)));
}
