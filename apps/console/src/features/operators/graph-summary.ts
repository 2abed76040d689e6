import type { GraphNodeKind, SpecGraph } from "@operon/operator-spec/spec-graph";

const KIND_NAMES: Record<GraphNodeKind, [string, string]> = {
  input: ["input", "inputs"],
  model: ["model step", "model steps"],
  route: ["route", "routes"],
  exit: ["exit", "exits"],
  output: ["output", "outputs"],
};

/** "5 nodes (2 inputs, 2 model steps, 1 output) and 5 edges; 1 node has a problem." */
export function graphSummary(graph: SpecGraph, problemNodes: ReadonlySet<string>): string {
  const counts = new Map<GraphNodeKind, number>();
  for (const node of graph.nodes) counts.set(node.kind, (counts.get(node.kind) ?? 0) + 1);
  const parts = (Object.keys(KIND_NAMES) as GraphNodeKind[]).flatMap((kind) => {
    const count = counts.get(kind) ?? 0;
    return count > 0 ? [`${count} ${KIND_NAMES[kind][count === 1 ? 0 : 1]}`] : [];
  });
  const blamed = graph.nodes.filter((node) => problemNodes.has(node.id)).length;
  const nodes = `${graph.nodes.length} ${graph.nodes.length === 1 ? "node" : "nodes"}`;
  const edges = `${graph.edges.length} ${graph.edges.length === 1 ? "edge" : "edges"}`;
  const problems = blamed > 0 ? `; ${blamed} ${blamed === 1 ? "node has" : "nodes have"} a problem` : "";
  return `${nodes}${parts.length > 0 ? ` (${parts.join(", ")})` : ""} and ${edges}${problems}.`;
}
