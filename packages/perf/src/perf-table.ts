import { type PerfReport, type PerfStep, stepLoadLabel } from "./perf-report.js";

/**
 * The human form of a PerfReport, laid out like perf_analyzer's output:
 * the measurement settings, a Client/Server block per step, the
 * "Concurrency: N, throughput: X infer/sec, latency Y usec" lines (Y is the
 * average latency, as in perf_analyzer without --percentile), then an
 * aligned summary table and any warnings. All times in usec.
 */
export function formatPerfReport(report: PerfReport): string {
  const lines: string[] = [];
  const config = report.config;
  const transport =
    report.protocol === "http"
      ? `HTTP (${config.binaryData ? "binary tensor data" : "JSON tensor data"})`
      : "gRPC (raw_input_contents)";
  lines.push("*** Measurement Settings ***");
  lines.push(
    `  Model: ${report.model}${report.version === "" ? "" : ` (version ${report.version})`} over ${transport} at ${config.url}`,
  );
  lines.push(`  Batch size: ${config.batchSize}`);
  lines.push(
    `  Inputs: ${config.inputs.map((input) => `${input.name} ${input.datatype} [${input.shape.join(",")}]`).join(", ")} (${config.inputData} data)`,
  );
  if (config.requestCount !== undefined) {
    lines.push(`  Request count: ${config.requestCount} requests per step, measured as one window`);
  } else {
    lines.push(
      `  Measurement window: ${config.measurementIntervalMs} msec; stable when 3 windows agree within ${config.stabilityPercentage}%` +
        ` on throughput and average latency; at most ${config.maxTrials} windows`,
    );
  }
  if (report.mode === "request-rate") lines.push(`  Request distribution: ${config.requestDistribution ?? "constant"}`);
  lines.push("");

  for (const step of report.steps) {
    lines.push(
      report.mode === "concurrency" ? `Request concurrency: ${step.concurrency}` : `Request rate: ${step.requestRate}`,
    );
    lines.push("  Client:");
    lines.push(`    Request count: ${step.requests}${step.errors > 0 ? ` (${step.errors} errors)` : ""}`);
    lines.push(
      `    Throughput: ${step.throughputInferPerSec.toFixed(1)} infer/sec (${step.throughputRequestsPerSec.toFixed(1)} requests/sec)`,
    );
    const l = step.latencyUs;
    lines.push(
      `    Avg latency: ${us(l.avg)} usec (p50 ${us(l.p50)}, p90 ${us(l.p90)}, p95 ${us(l.p95)}, p99 ${us(l.p99)}, min ${us(l.min)}, max ${us(l.max)} usec)`,
    );
    if (step.server !== undefined) {
      const s = step.server;
      lines.push("  Server:");
      lines.push(`    Request count: ${s.requests}`);
      lines.push(
        `    Avg queue ${us(s.queueUs)} usec + compute input ${us(s.computeInputUs)} usec + compute infer ${us(s.computeInferUs)} usec` +
          ` + compute output ${us(s.computeOutputUs)} usec`,
      );
      const batches = Object.entries(s.batchSizes).sort(([a], [b]) => Number(a) - Number(b));
      if (batches.length > 0)
        lines.push(`    Executions by batch size: ${batches.map(([size, count]) => `${size}: ${count}`).join(", ")}`);
    }
  }
  if (report.steps.length > 0) lines.push("");

  lines.push("Inferences/Second vs. Client Average Batch Latency");
  for (const step of report.steps) {
    lines.push(
      `${stepLoadLabel(step)}, throughput: ${step.throughputInferPerSec.toFixed(1)} infer/sec, latency ${us(step.latencyUs.avg)} usec`,
    );
  }
  lines.push("");
  lines.push(...summaryTable(report));

  const warnings = report.steps.flatMap((step) => warningsOf(report, step));
  if (warnings.length > 0) lines.push("", ...warnings);
  return `${lines.join("\n")}\n`;
}

/** The aligned table: one row per step; server columns are "-" without server statistics. */
export function summaryTable(report: PerfReport): string[] {
  const head = [
    report.mode === "concurrency" ? "Concurrency" : "Request rate",
    "Infer/sec",
    "p50 usec",
    "p90 usec",
    "p95 usec",
    "p99 usec",
    "Avg usec",
    "Queue usec",
    "Compute in",
    "Compute infer",
    "Compute out",
    "Requests",
    "Errors",
    "Stable",
  ];
  const rows = report.steps.map((step) => {
    const l = step.latencyUs;
    const s = step.server;
    const server = (value: number | undefined): string => (value === undefined ? "-" : us(value));
    return [
      String(step.concurrency ?? step.requestRate),
      step.throughputInferPerSec.toFixed(1),
      us(l.p50),
      us(l.p90),
      us(l.p95),
      us(l.p99),
      us(l.avg),
      server(s?.queueUs),
      server(s?.computeInputUs),
      server(s?.computeInferUs),
      server(s?.computeOutputUs),
      String(step.requests),
      String(step.errors),
      step.stable ? "yes" : "no",
    ];
  });
  const widths = head.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)));
  // First column left-aligned (a label), numbers right-aligned.
  const render = (cells: string[]): string =>
    cells
      .map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!)))
      .join("  ")
      .trimEnd();
  return [render(head), widths.map((width) => "-".repeat(width)).join("  "), ...rows.map(render)];
}

function warningsOf(report: PerfReport, step: PerfStep): string[] {
  const warnings: string[] = [];
  const label = stepLoadLabel(step).toLowerCase().replace(":", "");
  if (!step.stable) {
    const measured = step.windows.length;
    warnings.push(
      `Warning: ${label} did not stabilize within ${report.config.stabilityPercentage}% ` +
        `(${measured === report.config.maxTrials ? `all ${measured}` : `${measured} of at most ${report.config.maxTrials}`} windows measured); ` +
        "its figures are the last windows merged",
    );
  }
  if (step.errors > 0 || step.errorSamples.length > 0) {
    warnings.push(
      `Errors at ${label}: ${step.errors} failed requests${step.errorSamples.length > 0 ? `; e.g. ${step.errorSamples[0]}` : ""}`,
    );
  }
  return warnings;
}

function us(value: number): string {
  return String(Math.round(value));
}
