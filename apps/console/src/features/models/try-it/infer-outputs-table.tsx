import type { RouterOutputs } from "@/lib/api-types";
import { formatMs } from "@/lib/number-format";
import { TensorOutputsTable } from "@/components/tensors/tensor-outputs-table";

export type InferResult = RouterOutputs["models"]["infer"];

const SHOWN_VALUES = 256;

/** The answer: each output tensor, and how long the round trip through the gateway took. */
export function InferOutputsTable({ result }: { result: InferResult }) {
  return (
    <div className="try-result" aria-labelledby="try-result-title">
      <h3 id="try-result-title">Result</h3>
      <p>
        Version {result.modelVersion || "?"} answered in{" "}
        <strong className="try-latency">{formatMs(result.latencyMs)}</strong> (round trip through the gateway).
      </p>
      <TensorOutputsTable outputs={result.outputs} maxValues={SHOWN_VALUES} />
    </div>
  );
}
