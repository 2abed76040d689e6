import type { ModelStepSpec, OperatorSpec } from "@operon/operator-spec/operator-spec-schema";
import type { OperatorGraph } from "@operon/operator-spec/operator-structure";

/**
 * The GPU a step model's tensors may stay on (repository/device-placement.ts
 * decides it from the served config), or undefined.
 */
export type DeviceOf = (model: string, version: string | undefined) => number | undefined;

/** An intermediate tensor an operator may leave on a GPU between two steps. */
export interface DeviceEdge {
  /** The tensor's name on the operator's board. */
  tensor: string;
  producer: ModelStepSpec;
  /** The producer's output that is the tensor. */
  output: string;
  consumer: ModelStepSpec;
}

/**
 * The edges of an operator along which a tensor may stay on a GPU: produced
 * by one model step and read by exactly one other model step, both on the
 * same single GPU now (deviceOf), neither with a fallback model (which may
 * run elsewhere), and never an operator output, nor read by a route or an
 * exit (they read its bytes in the gateway). Computed once per operator, so
 * an operator of CPU steps has none and its requests do no work for this;
 * each request checks its edges again (a step model may have been reloaded
 * elsewhere since) with stillOnOneGpu.
 */
export function planDeviceEdges(
  spec: OperatorSpec,
  graph: OperatorGraph,
  deviceOf: DeviceOf | undefined,
): DeviceEdge[] {
  if (deviceOf === undefined) return [];
  const outputs = new Set(spec.outputs.map((output) => output.name));
  const readers = new Map<string, string[]>();
  for (const node of graph.nodes.values())
    for (const tensor of node.reads) readers.set(tensor, [...(readers.get(tensor) ?? []), node.step.id]);
  const edges: DeviceEdge[] = [];
  for (const producer of spec.steps) {
    if (producer.kind !== "model" || producer.fallback !== undefined) continue;
    const gpu = deviceOf(producer.model, producer.version);
    if (gpu === undefined) continue;
    for (const [output, tensor] of Object.entries(producer.outputs)) {
      if (outputs.has(tensor) || graph.producers.get(tensor)?.length !== 1) continue;
      const read = readers.get(tensor) ?? [];
      if (read.length !== 1) continue;
      const consumer = graph.nodes.get(read[0]!)?.step;
      if (consumer?.kind !== "model" || consumer.fallback !== undefined) continue;
      if (deviceOf(consumer.model, consumer.version) !== gpu) continue;
      edges.push({ tensor, producer, output, consumer });
    }
  }
  return edges;
}

/** An edge's two models still run on one GPU (checked per request). */
export function stillOnOneGpu(edge: DeviceEdge, deviceOf: DeviceOf): boolean {
  const gpu = deviceOf(edge.producer.model, edge.producer.version);
  return gpu !== undefined && deviceOf(edge.consumer.model, edge.consumer.version) === gpu;
}
