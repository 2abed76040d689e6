import { formatInteger, formatMs } from "@/lib/number-format";
import { formatDateTime } from "@/lib/format";
import type { ModelDetail } from "./model-detail-types";
import { FactList } from "@/components/fact-list";

/** The gateway's counters since the model was loaded. */
export function ModelStatistics({ statistics }: { statistics: ModelDetail["statistics"] }) {
  if (statistics === null) return <p className="muted">Statistics appear while the model is loaded.</p>;
  const facts: Array<[string, string]> = [
    ["Inferences", formatInteger(statistics.inferenceCount)],
    ["Executions", formatInteger(statistics.executionCount)],
    ["Successful requests", formatInteger(statistics.successCount)],
    ["Failed requests", formatInteger(statistics.failureCount)],
    ["Mean request time", formatMs(statistics.averageLatencyMs)],
    ["Mean queue time", formatMs(statistics.averageQueueMs)],
    ["Mean compute time", formatMs(statistics.averageComputeMs)],
    ["Last inference", formatDateTime(statistics.lastInferenceAt, "never")],
  ];
  return <FactList facts={facts} />;
}
