import { describe, expect, it } from "vitest";
import { instanceCountLine } from "./instance-count-line";

describe("instanceCountLine", () => {
  it("counts where each instance runs, naming the event loop only when a model runs inline", () => {
    const rows = (isolations: Array<"thread" | "process" | "inline">) => isolations.map((isolation) => ({ isolation }));
    expect(instanceCountLine(rows(["thread", "thread", "process"]))).toBe(
      "3 instances: 1 in a worker process, 2 on gateway threads",
    );
    expect(instanceCountLine(rows(["thread", "inline", "inline", "process", "process"]))).toBe(
      "5 instances: 2 in worker processes, 1 on a gateway thread, 2 on the gateway's event loop",
    );
  });
});
