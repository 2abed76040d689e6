import { describe, expect, it } from "vitest";
import { mergeBackendMetrics } from "./backend-metrics-text.js";

const WORKER_A = `# HELP operon_identity_executed_requests Requests executed
# TYPE operon_identity_executed_requests counter
operon_identity_executed_requests{model="a"} 3
operon_identity_executed_requests{model="b"} 1
`;
const WORKER_B = `# HELP operon_identity_executed_requests Requests executed
# TYPE operon_identity_executed_requests counter
operon_identity_executed_requests{model="a"} 4
# HELP latency_us Latency
# TYPE latency_us histogram
latency_us_bucket{le="10"} 2
latency_us_sum 12
latency_us_count 2
`;

describe("mergeBackendMetrics", () => {
  it("sums a series published by several workers and writes HELP/TYPE once per family", () => {
    expect(mergeBackendMetrics([WORKER_A, WORKER_B])).toBe(
      [
        "# HELP operon_identity_executed_requests Requests executed",
        "# TYPE operon_identity_executed_requests counter",
        'operon_identity_executed_requests{model="a"} 7',
        'operon_identity_executed_requests{model="b"} 1',
        "# HELP latency_us Latency",
        "# TYPE latency_us histogram",
        'latency_us_bucket{le="10"} 2',
        "latency_us_sum 12",
        "latency_us_count 2",
        "",
      ].join("\n"),
    );
  });

  it("drops malformed lines and families that would shadow Operon's own", () => {
    const text = 'garbage line here\nnv_inference_count{model="x"} 5\nok_total 1\n';
    expect(mergeBackendMetrics([text], new Set(["nv_inference_count"]))).toBe("ok_total 1\n");
    expect(mergeBackendMetrics([""])).toBe("");
  });
});
