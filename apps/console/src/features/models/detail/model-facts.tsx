import { formatInteger } from "@/lib/number-format";
import type { ModelDetail } from "./model-detail-types";
import { FactList } from "@/components/fact-list";

const MODEL_SOURCE_FACT: Record<ModelDetail["source"], string> = {
  uploaded: "Uploaded",
  repository: "Model repository folder",
  operator: "Operator registered in the console",
};

/** The model at a glance: where it comes from, what serves it, how much. */
export function ModelFacts({ model }: { model: ModelDetail }) {
  const facts: Array<[string, string]> = [
    ["Source", MODEL_SOURCE_FACT[model.source]],
    ["Platform", model.platform ?? "—"],
    ["Backend", model.backend ?? "—"],
    ["Instances", String(model.instanceCount)],
    ["Inferences", formatInteger(model.inferenceCount)],
    ["Used by operators", model.usedBy.length > 0 ? model.usedBy.join(", ") : "none"],
  ];
  return <FactList facts={facts} />;
}
