import { Graph, layout } from "@dagrejs/dagre";
import type { SpecGraph } from "@operon/operator-spec/spec-graph";

export const NODE_WIDTH = 190;
export const NODE_HEIGHT = 58;

export interface Positioned {
  id: string;
  /** Top-left corner, as React Flow places nodes. */
  x: number;
  y: number;
}

/** Top-to-bottom layered layout (dagre); edge labels get room between the layers. */
export function layoutGraph(graph: SpecGraph): Map<string, Positioned> {
  const g = new Graph({ multigraph: true });
  g.setGraph({ rankdir: "TB", nodesep: 36, ranksep: 70, edgesep: 16, marginx: 8, marginy: 8 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const node of graph.nodes) g.setNode(node.id, { width: NODE_WIDTH, height: NODE_HEIGHT });
  for (const edge of graph.edges)
    g.setEdge(
      edge.source,
      edge.target,
      { width: Math.min(160, edge.label.length * 7), height: 18, labelpos: "c" },
      edge.id,
    );
  layout(g);
  const positions = new Map<string, Positioned>();
  for (const node of graph.nodes) {
    const placed = g.node(node.id) as { x: number; y: number } | undefined;
    positions.set(node.id, {
      id: node.id,
      x: (placed?.x ?? 0) - NODE_WIDTH / 2,
      y: (placed?.y ?? 0) - NODE_HEIGHT / 2,
    });
  }
  return positions;
}
