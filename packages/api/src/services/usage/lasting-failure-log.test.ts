import { describe, expect, it } from "vitest";
import type { Logger } from "@operon/protocol/logger";
import { GatewayOutageLog, isKeyRefusal, KeyRefusalLog } from "./lasting-failure-log.js";

interface Line {
  level: "info" | "warn" | "error";
  msg: string;
  fields: Record<string, unknown>;
}

function capturingLogger(): Logger & { lines: Line[] } {
  const lines: Line[] = [];
  const push = (level: Line["level"]) => (obj: object | string, msg?: string) =>
    void lines.push({ level, msg: msg ?? String(obj), fields: typeof obj === "object" ? { ...obj } : {} });
  return { lines, info: push("info"), warn: push("warn"), error: push("error") };
}

const REFUSED = Object.assign(new Error("the gateway refused the control plane's key: no valid API key"), {
  status: 401,
});

describe("isKeyRefusal", () => {
  it("is a 401 or 403, nothing else", () => {
    expect(isKeyRefusal(REFUSED)).toBe(true);
    expect(isKeyRefusal({ status: 403 })).toBe(true);
    expect(isKeyRefusal({ status: 503 })).toBe(false);
    expect(isKeyRefusal(new Error("not reachable"))).toBe(false);
    expect(isKeyRefusal(undefined)).toBe(false);
  });
});

describe("KeyRefusalLog", () => {
  it("says a refusal once when it starts, then at most once a reminder interval, counting the reads between", () => {
    const logger = capturingLogger();
    let now = 1_000_000;
    const log = new KeyRefusalLog(logger, { reminderMs: 60_000, now: () => now });
    for (let sample = 0; sample < 30; sample += 1) {
      log.refused("workers of gw", "workers could not be read (refused)", REFUSED);
      now += 1_000;
    }
    // 30 samples a second apart: the first line only.
    expect(logger.lines.map((line) => [line.level, line.msg])).toEqual([
      ["warn", "workers could not be read (refused)"],
    ]);
    expect(logger.lines[0]!.fields).toMatchObject({ err: REFUSED, source: "workers of gw" });
    now += 30_000;
    log.refused("workers of gw", "workers could not be read (refused)", REFUSED);
    expect(logger.lines).toHaveLength(2);
    expect(logger.lines[1]).toMatchObject({
      level: "warn",
      msg: "workers could not be read (refused) (still refused: 30 reads since the last line about it)",
      fields: { refusedSince: new Date(1_000_000).toISOString(), refusedReadsSinceLastLine: 30 },
    });
    // The reminder restarts the interval.
    now += 59_000;
    log.refused("workers of gw", "workers could not be read (refused)", REFUSED);
    expect(logger.lines).toHaveLength(2);
  });

  it("says once that the key is accepted again, and a new refusal after that at once", () => {
    const logger = capturingLogger();
    const log = new KeyRefusalLog(logger, { reminderMs: 60_000, now: () => 0 });
    log.accepted("statistics of gw");
    expect(logger.lines).toEqual([]);
    log.refused("statistics of gw", "skipped (refused)", REFUSED);
    log.refused("statistics of gw", "skipped (refused)", REFUSED);
    log.accepted("statistics of gw");
    log.accepted("statistics of gw");
    log.refused("statistics of gw", "skipped (refused)", REFUSED);
    expect(logger.lines.map((line) => [line.level, line.msg])).toEqual([
      ["warn", "skipped (refused)"],
      ["info", "the gateway accepts the control plane's key again (statistics of gw)"],
      ["warn", "skipped (refused)"],
    ]);
  });

  it("keeps each source's state apart", () => {
    const logger = capturingLogger();
    const log = new KeyRefusalLog(logger, { now: () => 0 });
    for (let sample = 0; sample < 3; sample += 1) {
      log.refused("workers of a", "a refused", REFUSED);
      log.refused("workers of b", "b refused", REFUSED);
    }
    log.accepted("workers of a");
    expect(logger.lines.map((line) => line.msg)).toEqual([
      "a refused",
      "b refused",
      "the gateway accepts the control plane's key again (workers of a)",
    ]);
  });
});

describe("GatewayOutageLog", () => {
  const DOWN = new Error("gateway-b:8000 is not reachable: connect ECONNREFUSED");

  it("says an outage once, reminds with the count of failed reads, and says once that it is over", () => {
    const logger = capturingLogger();
    let now = 0;
    const log = new GatewayOutageLog(logger, { reminderMs: 60_000, now: () => now });
    for (let sample = 0; sample < 5; sample += 1) {
      log.failed("statistics of gw", "usage sample skipped for gw", DOWN);
      now += 15_000;
    }
    log.failed("statistics of gw", "usage sample skipped for gw", DOWN);
    log.succeeded("statistics of gw");
    log.succeeded("statistics of gw");
    expect(logger.lines.map((line) => [line.level, line.msg])).toEqual([
      ["warn", "usage sample skipped for gw"],
      ["warn", "usage sample skipped for gw (still failing: 4 reads since the last line about it)"],
      ["info", "the gateway can be read again (statistics of gw)"],
    ]);
    expect(logger.lines[1]!.fields).toMatchObject({
      failingSince: new Date(0).toISOString(),
      failedReadsSinceLastLine: 4,
    });
  });
});
