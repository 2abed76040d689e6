import { formatInteger, formatNumber } from "@/lib/number-format";
import { inUnit, perfLatencyUnit } from "./perf-latency-unit";
import type { PerfSample } from "./perf-types";
import { TableScroller } from "@/components/table-scroller";

/** Triton's perf table, one row per concurrency step; latencies in the report's one unit (µs, as perf_analyzer prints them, while they are under 1 ms). */
export function PerfTable({ samples }: { samples: readonly PerfSample[] }) {
  const unit = perfLatencyUnit(samples);
  const us = (value: number | null) =>
    unit.symbol === "µs" ? formatInteger(value) : formatNumber(inUnit(value, unit));
  return (
    <TableScroller label="Perf steps">
      <table className="perf-table">
        <caption>
          Per step; latencies and server times in {unit.name} ({unit.symbol}). Queue and compute are the server&apos;s
          averages per request.
        </caption>
        <thead>
          <tr>
            <th scope="col" className="cell-number">
              Concurrency
            </th>
            <th scope="col" className="cell-number">
              Batch
            </th>
            <th scope="col" className="cell-number">
              Inferences/s
            </th>
            <th scope="col" className="cell-number">
              p50 ({unit.symbol})
            </th>
            <th scope="col" className="cell-number">
              p90 ({unit.symbol})
            </th>
            <th scope="col" className="cell-number">
              p95 ({unit.symbol})
            </th>
            <th scope="col" className="cell-number">
              p99 ({unit.symbol})
            </th>
            <th scope="col" className="cell-number">
              Avg ({unit.symbol})
            </th>
            <th scope="col" className="cell-number">
              Queue ({unit.symbol})
            </th>
            <th scope="col" className="cell-number">
              Compute ({unit.symbol})
            </th>
            <th scope="col" className="cell-number">
              Errors
            </th>
          </tr>
        </thead>
        <tbody>
          {samples.map((sample) => (
            <tr key={`${sample.concurrency}/${sample.batchSize}`}>
              <th scope="row" className="cell-number">
                {sample.concurrency}
              </th>
              <td className="cell-number">{sample.batchSize}</td>
              <td className="cell-number">{formatNumber(sample.throughput)}</td>
              <td className="cell-number">{us(sample.latencyP50Us)}</td>
              <td className="cell-number">{us(sample.latencyP90Us)}</td>
              <td className="cell-number">{us(sample.latencyP95Us)}</td>
              <td className="cell-number">{us(sample.latencyP99Us)}</td>
              <td className="cell-number">{us(sample.latencyAvgUs)}</td>
              <td className="cell-number">{us(sample.queueUs)}</td>
              <td className="cell-number">{us(sample.computeUs)}</td>
              <td className="cell-number">{sample.errorCount}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableScroller>
  );
}
