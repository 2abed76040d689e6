import { formatBytes, formatInteger, formatPercent } from "@/lib/number-format";
import type { UsageTotals } from "./usage-totals";

/** The headline numbers: a definition list, so each figure keeps its name for screen readers. */
export function UsageTiles({ totals }: { totals: UsageTotals }) {
  const tiles = [
    { label: "Requests", value: formatInteger(totals.requests), hint: "to models, since they were loaded" },
    {
      label: "Errors",
      value: formatInteger(totals.errors),
      hint: totals.requests > 0 ? `${formatPercent(totals.errors / totals.requests)} of requests` : "no requests yet",
    },
    {
      label: "Models served",
      value: formatInteger(totals.models),
      hint:
        totals.operators > 0 ? `and ${totals.operators} operator${totals.operators === 1 ? "" : "s"}` : "no operators",
    },
    {
      label: "Instances",
      value: totals.instances === null ? "—" : formatInteger(totals.instances),
      hint: totals.readyInstances === null ? "workers unknown" : `${formatInteger(totals.readyInstances)} ready`,
    },
    { label: "CPU", value: formatPercent(totals.cpuUtilization), hint: "of the host, last sample" },
    {
      label: "Memory",
      value: formatBytes(totals.memoryBytes),
      // The gateway holds every model that runs on its threads (ONNX Runtime): leaving it out understated memory.
      hint: `resident: gateway ${formatBytes(totals.gatewayMemoryBytes)}, worker processes ${formatBytes(totals.workerMemoryBytes)}`,
    },
  ];
  return (
    <dl className="stat-tiles">
      {tiles.map((tile) => (
        <div key={tile.label} className="stat-tile">
          <dt>{tile.label}</dt>
          <dd className="stat-value">{tile.value}</dd>
          <dd className="stat-hint">{tile.hint}</dd>
        </div>
      ))}
    </dl>
  );
}
