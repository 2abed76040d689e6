import { describe, expect, it } from "vitest";
import {
  formatBytes,
  formatCount,
  formatHours,
  formatInteger,
  formatMoney,
  formatLatencyUs,
  formatLatencyValue,
  formatMs,
  formatNumber,
  formatPercent,
  formatSeconds,
  formatSmall,
  perMillionInferences,
} from "./number-format";

// The runner's locale may group digits differently; these values avoid separators except where noted.
describe("the console's number formats", () => {
  it("fits the digits to the size of the value and writes unknown values as a dash", () => {
    expect([formatNumber(3.14159), formatNumber(31.4159), formatNumber(314.159)]).toEqual(["3.14", "31.4", "314"]);
    expect([
      formatNumber(null),
      formatNumber(undefined),
      formatNumber(Number.NaN),
      formatBytes(Number.POSITIVE_INFINITY),
    ]).toEqual(["—", "—", "—", "—"]);
    expect(formatInteger(41.6)).toBe("42");
  });

  it("counts with the noun in the singular only for exactly one", () => {
    expect([
      formatCount(1, "inference"),
      formatCount(0, "inference"),
      formatCount(2, "inference"),
      formatCount(1, "query", "queries"),
      formatCount(null, "inference"),
    ]).toEqual(["1 inference", "0 inferences", "2 inferences", "1 query", "— inferences"]);
  });

  it("writes sizes in binary units with one decimal at most", () => {
    expect([
      formatBytes(512),
      formatBytes(1536),
      formatBytes(8 * 1024 ** 3),
      formatBytes(1.53 * 1024 ** 3),
      formatBytes(158.3 * 1024 ** 2),
    ]).toEqual(["512 B", "1.5 KiB", "8 GiB", "1.5 GiB", "158 MiB"]);
  });

  it("keeps sub-millisecond latencies apart and shares below 1 % visible", () => {
    expect([formatMs(0.0423), formatMs(3.14159), formatMs(120.4)]).toEqual(["0.042 ms", "3.14 ms", "120 ms"]);
    expect([formatPercent(0.0004), formatPercent(0.123), formatPercent(1)]).toEqual(["0.04 %", "12.3 %", "100 %"]);
    expect(formatSeconds(12.345)).toBe("12.3 s");
    expect(formatSmall(0.000123456)).toBe("0.000123");
  });

  it("writes every latency in milliseconds, whether the API gave µs or ms", () => {
    expect([formatLatencyUs(42.3), formatLatencyUs(412), formatLatencyUs(3141.59), formatLatencyUs(120_400)]).toEqual([
      "0.042 ms",
      "0.412 ms",
      "3.14 ms",
      "120 ms",
    ]);
    expect(formatLatencyUs(412)).toBe(formatMs(0.412));
    expect([formatLatencyValue(0.412), formatLatencyValue(31.42)]).toEqual(["0.412", "31.4"]);
    expect([formatLatencyUs(null), formatMs(undefined), formatLatencyValue(Number.NaN)]).toEqual(["—", "—", "—"]);
  });

  it("writes money in its currency at one precision, the currency's own, with '< 0.01' for a crumb", () => {
    expect(formatMoney(3.6, "USD")).toMatch(/3\.60/);
    expect(formatMoney(0.4123, "USD")).toMatch(/0\.41$/);
    expect(formatMoney(0.000412345, "USD")).toMatch(/^< .*0\.01$/);
    expect(formatMoney(0, "USD")).toMatch(/0\.00$/);
    expect(formatMoney(1234.5, "JPY")).not.toMatch(/\.\d/);
    // A well-formed code Intl has no symbol for is written out.
    expect(formatMoney(2.5, "XQQ")).toMatch(/XQQ.*2\.50/);
    expect(perMillionInferences(0.000412)).toBeCloseTo(0.412);
    expect(perMillionInferences(null)).toBeNull();
  });

  it("writes a span of hours in the unit that reads best", () => {
    expect([formatHours(18 / 3600), formatHours(4.5 / 60), formatHours(2.34)]).toEqual(["18 s", "4.5 min", "2.3 h"]);
  });
});
