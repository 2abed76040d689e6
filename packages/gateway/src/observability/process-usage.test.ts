import { describe, expect, it } from "vitest";
import { cpuSecondsOfStat, readProcessUsage, rssBytesOfStatm } from "./process-usage.js";

describe("process usage from procfs", () => {
  it("reads utime + stime (fields 14, 15) after a command name holding spaces and parentheses", () => {
    const stat =
      "4242 (node (worker) x) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 75 0 0 20 0 11 0 123456 1000000 5000 18446744073709551615";
    expect(cpuSecondsOfStat(stat)).toBe(3.25);
    expect(cpuSecondsOfStat("garbage")).toBeNull();
    expect(cpuSecondsOfStat("1 (x) S 1")).toBeNull();
  });

  it("reads resident pages (statm field 2) as 4096-byte pages", () => {
    expect(rssBytesOfStatm("10000 2500 300 10 0 900 0\n")).toBe(2500 * 4096);
    expect(rssBytesOfStatm("")).toBeNull();
  });

  it("reads this process on Linux, and null for a process that does not exist", async () => {
    const own = await readProcessUsage(process.pid);
    if (process.platform === "linux") {
      expect(own.cpuSeconds).toBeGreaterThan(0);
      expect(own.rssBytes).toBeGreaterThan(0);
    } else {
      expect(own).toEqual({ cpuSeconds: null, rssBytes: null });
    }
    expect(await readProcessUsage(2 ** 30)).toEqual({ cpuSeconds: null, rssBytes: null });
  });
});
