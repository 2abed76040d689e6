import { describe, expect, it } from "vitest";
import { controlText, gatewaysText, parseMappingLines, parseRowsPerRequest, timeLeft } from "./job-format";

describe("job page formatting", () => {
  it("says which gateways served a job's rows, and nothing for the control plane's gateway alone", () => {
    expect(gatewaysText([])).toBe("");
    expect(gatewaysText([{ gateway: "control-plane", rows: 30, concurrency: 2, away: false }])).toBe("");
    expect(
      gatewaysText([
        { gateway: "node-a:8000", rows: 1200, concurrency: 6, away: false },
        { gateway: "node-b:8000", rows: 980, concurrency: 0, away: true },
        { gateway: "node-c:8000", rows: 4, concurrency: null, away: null },
      ]),
    ).toBe("node-a:8000 1,200 rows (6 in flight) · node-b:8000 980 rows (away) · node-c:8000 4 rows");
  });

  it("says the time left", () => {
    expect(timeLeft(null)).toBe("–");
    expect(timeLeft(12.2)).toBe("13 s");
    expect(timeLeft(200)).toBe("3 min 20 s");
    expect(timeLeft(3840)).toBe("1 h 4 min");
  });

  it("parses column mappings, one a line, and names a bad line", () => {
    expect(parseMappingLines("X = a, b\n\nT=text:label\nI=image-path:file")).toEqual({
      mapping: [
        { input: "X", kind: "tensor", columns: ["a", "b"] },
        { input: "T", kind: "text", column: "label" },
        { input: "I", kind: "image-path", column: "file" },
      ],
    });
    expect(parseMappingLines("X a b").problem).toBe("line 1: write INPUT=col1,col2 or INPUT=text:column");
  });

  it("reads the optional rows per request: empty is the server's default, else a whole number in range", () => {
    expect(parseRowsPerRequest("  ")).toEqual({});
    expect(parseRowsPerRequest(" 3 ", 4)).toEqual({ value: 3 });
    expect(parseRowsPerRequest("2")).toEqual({ value: 2 });
    expect(parseRowsPerRequest("2.5", 4).problem).toBe("a whole number of rows, 1 to 4");
    expect(parseRowsPerRequest("-1").problem).toBe("a whole number of rows, 1 or more");
    expect(parseRowsPerRequest("0").problem).toBe("0 rows: give 1 or more");
    expect(parseRowsPerRequest("8", 4).problem).toBe("8 rows: give 1 to 4 (the model's max_batch_size)");
  });

  it("says why a running job has the requests in flight it has", () => {
    const control = { limit: 4, onlineP99Ms: 12.34, onlineBudgetMs: 14, baselineMs: 12.7 };
    expect(controlText({ ...control, reason: "within" })).toBe("growing: online p99 12.3 ms of its 14 ms budget");
    expect(controlText({ ...control, reason: "steady" })).toBe(
      "holding at its set point: online p99 12.3 ms of its 14 ms budget",
    );
    expect(controlText({ ...control, reason: "online-over", onlineP99Ms: 19 })).toBe(
      "backing off: online p99 19 ms of its 14 ms budget",
    );
    expect(controlText({ ...control, reason: "baseline" })).toBe("measured online p99 without the job: 12.7 ms");
    expect(controlText({ ...control, reason: "within", onlineP99Ms: undefined })).toBe(
      "growing: online p99 — of its 14 ms budget",
    );
    expect(controlText({ ...control, reason: "overloaded" })).toBe("backing off: the gateway refused requests as busy");
    expect(controlText({ ...control, reason: "clear" })).toBe("growing fast: online p99 12.3 ms of its 14 ms budget");
    expect(controlText({ ...control, reason: "over-once", onlineP99Ms: 15 })).toBe(
      "holding: online p99 15 ms of its 14 ms budget (once; a second time backs off)",
    );
  });
});
