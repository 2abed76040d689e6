import { describe, expect, it } from "vitest";
import { logFileOf } from "./log-file.js";

describe("logFileOf", () => {
  it("keeps the JSON log off a terminal by default, in the data folder", () => {
    expect(logFileOf(undefined, true, "/srv/operon")).toBe("/srv/operon/logs/operon.log");
  });
  it("writes to stdout when it is not a terminal (a collector reads it), or when asked with -", () => {
    expect(logFileOf(undefined, false, "/srv/operon")).toBeUndefined();
    expect(logFileOf("-", true, "/srv/operon")).toBeUndefined();
  });
  it("writes to the file given", () => {
    expect(logFileOf("/var/log/operon.jsonl", false, "/srv/operon")).toBe("/var/log/operon.jsonl");
  });
});
