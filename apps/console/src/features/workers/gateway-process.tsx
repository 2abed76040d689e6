import { formatBytes, formatSeconds } from "@/lib/number-format";
import type { RouterOutputs } from "@/lib/api-types";
import { formatDateTime } from "@/lib/format";
import { formatCores } from "./cpu-rates";

type WorkersList = RouterOutputs["workers"]["list"];

/** The gateway process itself (it routes requests; the workers run the models). */
export function GatewayProcess({ data, cpuRate }: { data: WorkersList; cpuRate: number | undefined }) {
  const facts: Array<[string, string]> = [
    ["PID", String(data.gateway.pid)],
    ["CPU seconds", formatSeconds(data.gateway.cpuSeconds)],
    ["CPU now", formatCores(cpuRate)],
    ["RSS", formatBytes(data.gateway.rssBytes)],
    ["Host CPU cores", String(data.hostCpuCores)],
    ["Read at", formatDateTime(data.readAt)],
  ];
  return (
    <dl className="facts">
      {facts.map(([term, value]) => (
        <div key={term} className="fact">
          <dt>{term}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
  );
}
