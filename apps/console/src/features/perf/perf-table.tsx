import { DataTable, type DataColumn } from "@/components/data-table/data-table";
import { formatLatencyValue, formatNumber } from "@/lib/number-format";
import { inUnit, PERF_LATENCY_UNIT } from "./perf-latency-unit";
import type { PerfSample } from "./perf-types";

type LatencyField =
  | "latencyP50Us"
  | "latencyP90Us"
  | "latencyP95Us"
  | "latencyP99Us"
  | "latencyAvgUs"
  | "queueUs"
  | "computeUs";

const LATENCIES: readonly [LatencyField, string][] = [
  ["latencyP50Us", "p50"],
  ["latencyP90Us", "p90"],
  ["latencyP95Us", "p95"],
  ["latencyP99Us", "p99"],
  ["latencyAvgUs", "Avg"],
  ["queueUs", "Queue"],
  ["computeUs", "Compute"],
];

/** Triton's perf table, one row per concurrency step in measurement order (not sortable: the order is the sweep's); latencies in milliseconds, the console's one latency unit (perf-latency-unit.ts). */
export function PerfTable({
  samples,
  stableByConcurrency,
}: {
  samples: readonly PerfSample[];
  /** From the report's summary: whether each step's last windows agreed; null when unknown (an imported CSV). */
  stableByConcurrency?: ReadonlyMap<number, boolean | null>;
}) {
  const unit = PERF_LATENCY_UNIT;
  const shown = (value: number | null) => formatLatencyValue(inUnit(value, unit));
  const columns: DataColumn<PerfSample>[] = [
    {
      id: "concurrency",
      header: "Concurrency",
      rowHeader: true,
      numeric: true,
      cell: (sample) => sample.concurrency,
    },
    { id: "batch", header: "Batch", numeric: true, cell: (sample) => sample.batchSize },
    {
      id: "throughput",
      header: "Inferences/s",
      numeric: true,
      cell: (sample) => formatNumber(sample.throughput),
    },
    ...LATENCIES.map(
      ([field, name]): DataColumn<PerfSample> => ({
        id: field,
        header: `${name} (${unit.symbol})`,
        numeric: true,
        cell: (sample) => shown(sample[field]),
      }),
    ),
    { id: "errors", header: "Errors", numeric: true, cell: (sample) => sample.errorCount },
    ...(stableByConcurrency !== undefined
      ? [
          {
            id: "stable",
            header: "Stable",
            cell: (sample: PerfSample) => stableLabel(stableByConcurrency.get(sample.concurrency)),
          } satisfies DataColumn<PerfSample>,
        ]
      : []),
  ];
  return (
    <DataTable
      label="Perf steps"
      caption={`Per step; latencies and server times in ${unit.name} (${unit.symbol}). Queue and compute are the server's averages per request.`}
      captionVisible
      className="perf-table"
      stack={false}
      columns={columns}
      rows={samples}
      rowKey={(sample) => `${sample.concurrency}/${sample.batchSize}`}
      empty={{ title: "No steps measured" }}
    />
  );
}

/** perf_analyzer's stability: the step's last three windows agreed within the stability percentage. */
function stableLabel(stable: boolean | null | undefined): string {
  if (stable === true) return "yes";
  if (stable === false) return "no: windows did not agree";
  return "—";
}
