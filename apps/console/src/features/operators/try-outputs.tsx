import { type OutputTensor, TensorOutputsTable } from "@/components/tensors/tensor-outputs-table";

/**
 * Tensors as a table, one row per tensor (KServe v2 JSON): the operator's answer, or the outputs of one step.
 * Long data is cut to `maxValues` here; a tensor marked `truncated` was already cut by the gateway (step outputs
 * keep only their first values), which the row says.
 */
const SHOWN_VALUES = 64;

interface RawTensor {
  name?: unknown;
  datatype?: unknown;
  shape?: unknown;
  data?: unknown;
  truncated?: unknown;
}

/** The gateway's JSON as it came (unknown), as the table's tensors. */
function asTensor(raw: unknown, index: number): OutputTensor {
  const output = (typeof raw === "object" && raw !== null ? raw : {}) as RawTensor;
  return {
    name: String(output.name ?? `#${index}`),
    datatype: String(output.datatype ?? "—"),
    shape: Array.isArray(output.shape) ? output.shape.map(Number) : [],
    data: Array.isArray(output.data) ? output.data : [],
    truncated: output.truncated === true,
  };
}

export function TryOutputs({
  outputs,
  caption = "Outputs",
  maxValues = SHOWN_VALUES,
}: {
  outputs: readonly unknown[];
  caption?: string;
  maxValues?: number;
}) {
  return <TensorOutputsTable outputs={outputs.map(asTensor)} caption={caption} maxValues={maxValues} />;
}
