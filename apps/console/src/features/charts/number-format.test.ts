import { describe, expect, it } from "vitest";
import { niceTicks } from "./nice-ticks";
import { formatExactTick, formatPercentTick, formatTimeTick } from "./number-format";

describe("formatTimeTick", () => {
  const at = new Date(2026, 11, 2, 14, 30).getTime();
  it("shows the clock with minutes within a day, and the date with the clock beyond (never the hour alone)", () => {
    expect(formatTimeTick(at, 3_600_000)).toMatch(/^14:30$/);
    const long = formatTimeTick(at, 7 * 24 * 3_600_000);
    expect(long).toMatch(/14:30$/);
    expect(long).toMatch(/2/);
    expect(long).not.toMatch(/ 14$/);
  });
});

describe("formatPercentTick", () => {
  const axis = (ticks: number[]) => ticks.map((tick) => formatPercentTick(tick, ticks));
  it("writes a small error rate's ticks apart, not 0 % at each", () => {
    const labels = axis(niceTicks(0.00001));
    expect(new Set(labels).size).toBe(labels.length);
    expect(labels[0]).toBe("0 %");
    expect(labels.at(-1)).toBe("0.001 %");
  });
  it("uses no more decimals than the step needs", () => {
    expect(axis(niceTicks(0.01))).toEqual(["0 %", "0.2 %", "0.4 %", "0.6 %", "0.8 %", "1 %"]);
    expect(axis(niceTicks(0.12))).toEqual(["0 %", "2.5 %", "5 %", "7.5 %", "10 %", "12.5 %"]);
    expect(axis(niceTicks(1))).toEqual(["0 %", "20 %", "40 %", "60 %", "80 %", "100 %"]);
  });
});

describe("formatExactTick", () => {
  it("writes a small cost axis's ticks apart, with the decimals they need", () => {
    const ticks = niceTicks(0.009);
    expect(ticks.map((tick) => formatExactTick(tick, ticks))).toEqual([
      "0",
      "0.002",
      "0.004",
      "0.006",
      "0.008",
      "0.01",
    ]);
    const whole = niceTicks(5);
    expect(whole.map((tick) => formatExactTick(tick, whole))).toEqual(["0", "1", "2", "3", "4", "5"]);
  });
});
