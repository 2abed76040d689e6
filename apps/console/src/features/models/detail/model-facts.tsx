import { formatInteger } from "@/lib/number-format";
import type { ModelDetail } from "./model-detail-types";
import { FactList } from "@/components/fact-list";

/** The model at a glance: where it comes from, what serves it, how much. */
export function ModelFacts({ model }: { model: ModelDetail }) {
  const facts: Array<[string, string]> = [
    ["Source", model.source === "uploaded" ? "Uploaded" : "Model repository folder"],
    ["Platform", model.platform ?? "—"],
    ["Backend", model.backend ?? "—"],
    ["Instances", String(model.instanceCount)],
    ["Inferences", formatInteger(model.inferenceCount)],
  ];
  return <FactList facts={facts} />;
}
