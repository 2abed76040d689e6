import { formatDateTime } from "@/lib/format";
import { formatCount, formatMs } from "../units";
import type { ModelDetail } from "./model-detail-types";
import { FactList } from "@/components/fact-list";

/** The gateway's counters since the model was loaded. */
export function ModelStatistics({ statistics }: { statistics: ModelDetail["statistics"] }) {
  if (statistics === null) return <p className="muted">Statistics appear while the model is loaded.</p>;
  const facts: Array<[string, string]> = [
    ["Inferences", formatCount(statistics.inferenceCount)],
    ["Executions", formatCount(statistics.executionCount)],
    ["Successful requests", formatCount(statistics.successCount)],
    ["Failed requests", formatCount(statistics.failureCount)],
    ["Mean request time", formatMs(statistics.averageLatencyMs)],
    ["Mean queue time", formatMs(statistics.averageQueueMs)],
    ["Mean compute time", formatMs(statistics.averageComputeMs)],
    ["Last inference", formatDateTime(statistics.lastInferenceAt, "never")],
  ];
  return (
    <FactList facts={facts} />
  );
}
