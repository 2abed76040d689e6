import { describe, expect, it } from "vitest";
import { perfReportCsv, perfReportFileName, stopReasonLabel } from "./perf-report-export";
import type { PerfReportDetail } from "./perf-types";

const report = {
  id: "0123456789abcdef",
  targetName: "ocr rec/v",
  targetVersion: "2",
  samples: [
    {
      concurrency: 1,
      batchSize: 1,
      throughput: 250.5,
      latencyAvgUs: 3990,
      latencyP50Us: 3900,
      latencyP90Us: 4200,
      latencyP95Us: 4300,
      latencyP99Us: 5000,
      queueUs: null,
      computeUs: 3100,
      errorCount: 0,
    },
  ],
} as unknown as PerfReportDetail;

describe("perf report downloads", () => {
  it("writes one CSV row per concurrency under a header, empty cells for unknown figures", () => {
    expect(perfReportCsv(report).split("\n")).toEqual([
      "concurrency,batch_size,throughput_infer_per_sec,latency_avg_us,latency_p50_us,latency_p90_us,latency_p95_us,latency_p99_us,server_queue_us,server_compute_us,errors",
      "1,1,250.5,3990,3900,4200,4300,5000,,3100,0",
      "",
    ]);
  });
  it("names files safely and says why a sweep ended", () => {
    expect(perfReportFileName(report, "csv")).toBe("perf-ocr_rec_v-v2-01234567.csv");
    expect(stopReasonLabel("plateau", 5)).toMatch(/less than 5 %/);
    expect(stopReasonLabel(null)).toBeNull();
  });
});
