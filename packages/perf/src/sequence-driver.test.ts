import { describe, expect, it } from "vitest";
import { PerfError } from "./perf-error.js";
import { type SequenceFlags, SequenceDriver, parseSequenceIdRange } from "./sequence-driver.js";

/** A send that records every request's flags and resolves when told to. */
function recordingSend() {
  const sent: SequenceFlags[] = [];
  const waiting: Array<() => void> = [];
  return {
    sent,
    send: (flags: SequenceFlags) => {
      sent.push(flags);
      return new Promise<void>((resolve) => waiting.push(resolve));
    },
    releaseAll: () => {
      for (const release of waiting.splice(0)) release();
    },
  };
}

const show = (flags: SequenceFlags) => `${flags.id}${flags.start ? "S" : ""}${flags.end ? "E" : ""}`;

describe("SequenceDriver", () => {
  it("sends sequences of the given length, the first request marked start and the last end", async () => {
    const sent: SequenceFlags[] = [];
    const driver = new SequenceDriver(async (flags) => void sent.push(flags), 3, { start: 7n, end: 100n });
    for (let i = 0; i < 7; i += 1) await driver.infer();
    expect(sent.map(show)).toEqual(["7S", "7", "7E", "8S", "8", "8E", "9S"]);
    expect(driver.openSequences).toBe(1);
  });

  it("keeps one request in flight per sequence: concurrent calls open sequences of their own", async () => {
    const recorder = recordingSend();
    const driver = new SequenceDriver(recorder.send, 2, { start: 1n, end: 100n });
    const first = [driver.infer(), driver.infer(), driver.infer()];
    expect(recorder.sent.map(show)).toEqual(["1S", "2S", "3S"]);
    recorder.releaseAll();
    await Promise.all(first);
    const second = [driver.infer(), driver.infer()];
    expect(recorder.sent.slice(3).map(show)).toEqual(["1E", "2E"]);
    recorder.releaseAll();
    await Promise.all(second);
    expect(driver.openSequences).toBe(1);
  });

  it("starts a fresh sequence after a failed request (its state on the server is unknown)", async () => {
    const sent: SequenceFlags[] = [];
    let fail = false;
    const driver = new SequenceDriver(
      async (flags) => {
        sent.push(flags);
        if (fail) throw new Error("UNAVAILABLE");
      },
      5,
      { start: 1n, end: 100n },
    );
    await driver.infer();
    fail = true;
    await expect(driver.infer()).rejects.toThrow("UNAVAILABLE");
    fail = false;
    await driver.infer();
    expect(sent.map(show)).toEqual(["1S", "1", "2S"]);
  });

  it("wraps correlation ids within the range", async () => {
    const sent: SequenceFlags[] = [];
    const driver = new SequenceDriver(async (flags) => void sent.push(flags), 1, { start: 3n, end: 4n });
    for (let i = 0; i < 3; i += 1) await driver.infer();
    await driver.single();
    expect(sent.map(show)).toEqual(["3SE", "4SE", "3SE", "4SE"]);
  });

  it("finish() ends every started sequence, so the server frees its slots at once", async () => {
    const sent: SequenceFlags[] = [];
    const driver = new SequenceDriver(async (flags) => void sent.push(flags), 10, { start: 1n, end: 100n });
    await Promise.all([driver.infer(), driver.infer()]);
    await driver.finish();
    expect(sent.map(show)).toEqual(["1S", "2S", "1E", "2E"]);
    expect(driver.openSequences).toBe(0);
    await driver.finish();
    expect(sent).toHaveLength(4);
  });

  it("refuses a sequence length below 1", () => {
    expect(() => new SequenceDriver(async () => {}, 0, { start: 1n, end: 2n })).toThrow(/--sequence-length/);
  });
});

describe("parseSequenceIdRange", () => {
  it("reads start and start:end as uint64", () => {
    expect(parseSequenceIdRange("5")).toEqual({ start: 5n, end: 2n ** 64n - 1n });
    expect(parseSequenceIdRange("10:20")).toEqual({ start: 10n, end: 20n });
    expect(parseSequenceIdRange("18446744073709551615")).toEqual({ start: 2n ** 64n - 1n, end: 2n ** 64n - 1n });
  });

  it.each([
    ["0", /0 means no sequence/],
    ["abc", /expected start or start:end/],
    ["-1", /expected start or start:end/],
    ["5:4", /end is below start/],
    ["18446744073709551616", /ids are from 1/],
  ])("refuses %s", (text, message) => {
    expect(() => parseSequenceIdRange(text)).toThrow(PerfError);
    expect(() => parseSequenceIdRange(text)).toThrow(message);
  });
});
