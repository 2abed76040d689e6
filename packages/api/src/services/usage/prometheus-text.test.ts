import { describe, expect, it } from "vitest";
import { latencyQuantiles, modelVersionKey, parsePrometheusText } from "./prometheus-text.js";

const TEXT = `# HELP nv_inference_request_summary_us Summary of inference request duration in microseconds
# TYPE nv_inference_request_summary_us summary
nv_inference_request_summary_us{quantile="0.5",model="add_sub",version="1"} 812.5
nv_inference_request_summary_us{quantile="0.99",model="add_sub",version="1"} 2100
nv_inference_request_summary_us{quantile="0.5",model="idle",version="1"} NaN
nv_inference_request_summary_us_sum{model="add_sub",version="1"} 9000
nv_inference_request_summary_us_count{model="add_sub",version="1"} 10
nv_inference_queue_summary_us{model="add_sub",version="1",quantile="0.5"} 40 1700000000000

nv_inference_count{model="we\\"ird\\\\name\\n",version="2"} 3
process_max_fds +Inf
up 1
`;

describe("Prometheus sample values", () => {
  it("reads NaN and Inf in any letter case, as Prometheus does (prom-client writes 'Nan')", () => {
    const values = parsePrometheusText("a Nan\nb nan\nc -inf\nd +Infinity\ne INF\nf 1e3\n").map(
      (sample) => sample.value,
    );
    expect(values[0]).toBeNaN();
    expect(values[1]).toBeNaN();
    expect(values.slice(2)).toEqual([
      Number.NEGATIVE_INFINITY,
      Number.POSITIVE_INFINITY,
      Number.POSITIVE_INFINITY,
      1000,
    ]);
  });

  it("names the line and the value it cannot read", () => {
    expect(() => parsePrometheusText("up 1\nbroken twelve\n")).toThrow(/line 2 .*value 'twelve' is not a number/);
  });
});

describe("Prometheus text reader", () => {
  it("reads sample lines with labels, escapes, special values and timestamps", () => {
    const samples = parsePrometheusText(TEXT);
    expect(samples).toHaveLength(9);
    expect(samples[0]).toEqual({
      name: "nv_inference_request_summary_us",
      labels: { quantile: "0.5", model: "add_sub", version: "1" },
      value: 812.5,
    });
    expect(samples[2]!.value).toBeNaN();
    expect(samples[5]!.value).toBe(40);
    expect(samples[6]!.labels["model"]).toBe('we"ird\\name\n');
    expect(samples[7]!.value).toBe(Number.POSITIVE_INFINITY);
    expect(samples[8]).toEqual({ name: "up", labels: {}, value: 1 });
  });

  it("collects the latency summaries' quantiles per model version, leaving out NaN", () => {
    const quantiles = latencyQuantiles(parsePrometheusText(TEXT));
    expect(quantiles.get(modelVersionKey("add_sub", "1"))).toEqual({
      request: { "0.5": 812.5, "0.99": 2100 },
      queue: { "0.5": 40 },
    });
    expect(quantiles.has(modelVersionKey("idle", "1"))).toBe(false);
  });

  it("leaves out a request or compute quantile of 0: prom-client's summary reports 0 once its window holds no observation", () => {
    const idle = `nv_inference_request_summary_us{quantile="0.5",model="was_busy",version="1"} 0
nv_inference_request_summary_us{quantile="0.99",model="was_busy",version="1"} 0
nv_inference_compute_infer_summary_us{quantile="0.5",model="was_busy",version="1"} 0
nv_inference_queue_summary_us{quantile="0.5",model="was_busy",version="1"} 0
`;
    expect(latencyQuantiles(parsePrometheusText(idle)).get(modelVersionKey("was_busy", "1"))).toEqual({
      queue: { "0.5": 0 },
    });
  });

  it("names the line of a malformed sample", () => {
    expect(() => parsePrometheusText('ok 1\nbroken{model="x" 1\n')).toThrow(/line 2 .*broken/);
    expect(() => parsePrometheusText("ok one\n")).toThrow(/line 1 .*'one' is not a number/);
  });
});
