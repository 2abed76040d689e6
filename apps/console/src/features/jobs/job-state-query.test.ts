import { describe, expect, it } from "vitest";
import { perJobState } from "./job-state-query";

describe("perJobState", () => {
  it("keys a job's query by its state after tRPC's path and input, and keeps no answer once left", () => {
    const options = { queryKey: [["jobs", "throughput"], { input: { id: "j1" }, type: "query" }] as const, retry: 1 };
    const running = perJobState(options, "RUNNING");
    const done = perJobState(options, "DONE");
    // tRPC reads [path, { input }] from a key of two entries (three would be [prefix, path, args]).
    expect(running.queryKey).toEqual([
      ["jobs", "throughput"],
      { input: { id: "j1" }, type: "query", jobState: "RUNNING" },
    ]);
    expect(done.queryKey[1]).toMatchObject({ input: { id: "j1" }, jobState: "DONE" });
    expect(running).toMatchObject({ retry: 1, gcTime: 0 });
  });
});
