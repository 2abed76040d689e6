import { Graph, layout } from "@dagrejs/dagre";
import type { SpecGraph } from "@operon/operator-spec/spec-graph";

export const NODE_WIDTH = 210;
/** A node's title and detail lines, and its padding. */
export const NODE_HEIGHT = 58;
/** One port row (operator-node.tsx), with the gap between rows. */
export const PORT_ROW_HEIGHT = 24;

export interface Positioned {
  id: string;
  /** Top-left corner, as React Flow places nodes. */
  x: number;
  y: number;
}

/** A node's height: its title and detail, then one row per port (inputs, then outputs). */
export function nodeHeight(portCount: number): number {
  return NODE_HEIGHT + (portCount > 0 ? 8 : 0) + portCount * PORT_ROW_HEIGHT;
}

/**
 * Left-to-right layered layout (dagre): inputs enter a node on its left,
 * outputs leave on its right; edge labels get room between the layers.
 * `heights` gives each node's height (nodeHeight), NODE_HEIGHT when absent.
 */
export function layoutGraph(
  graph: SpecGraph,
  heights: ReadonlyMap<string, number> = new Map(),
): Map<string, Positioned> {
  const g = new Graph({ multigraph: true });
  g.setGraph({ rankdir: "LR", nodesep: 28, ranksep: 80, edgesep: 16, marginx: 8, marginy: 8 });
  g.setDefaultEdgeLabel(() => ({}));
  const heightOf = (id: string) => heights.get(id) ?? NODE_HEIGHT;
  for (const node of graph.nodes) g.setNode(node.id, { width: NODE_WIDTH, height: heightOf(node.id) });
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
      y: (placed?.y ?? 0) - heightOf(node.id) / 2,
    });
  }
  return positions;
}
