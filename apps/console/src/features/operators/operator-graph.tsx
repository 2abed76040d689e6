"use client";

import "@xyflow/react/dist/style.css";
import { Background, Controls, MarkerType, Position, ReactFlow, type Edge, type Node } from "@xyflow/react";
import { useId, useMemo } from "react";
import { layoutGraph, NODE_HEIGHT, NODE_WIDTH } from "./graph-layout";
import { graphSummary } from "./graph-summary";
import type { GraphNodeKind, SpecGraph, SpecGraphEdge } from "@operon/operator-spec/spec-graph";
import { edgeKey, type EdgeProblem } from "@operon/operator-spec/problem-subjects";

const FLOW_TYPE: Record<GraphNodeKind, string> = {
  input: "input",
  output: "output",
  model: "default",
  route: "default",
  exit: "default",
};

/**
 * The operator's topology, drawn with React Flow: read-only (no dragging or
 * connecting), zoomable from its controls, with the same graph in words for
 * screen readers. Nodes the validation blames are marked; a connection whose
 * ends disagree on datatype or shape (the gateway's edge check, asked as the
 * spec is typed) is drawn in the danger colour with the mismatch written on
 * the edge itself ("⚠ FP32 → INT64"), before anything is saved.
 */
const NO_PROBLEMS: ReadonlySet<string> = new Set();
const NO_EDGE_PROBLEMS: ReadonlyMap<string, EdgeProblem[]> = new Map();

/** The mismatches on one drawn edge (its source and target nodes). */
function mismatchesOf(edge: SpecGraphEdge, problemEdges: ReadonlyMap<string, EdgeProblem[]>): EdgeProblem[] {
  return problemEdges.get(edgeKey(edge.source, edge.target)) ?? [];
}

/** "⚠ datatype INT32 → FP32" / "⚠ shape [-1,16] → [-1,8]": what the producer gives, then what the consumer takes. */
export function mismatchLabel(problems: readonly EdgeProblem[]): string {
  return `⚠ ${problems.map((p) => `${p.what} ${p.given} → ${p.expected}`).join("; ")}`;
}

export function OperatorGraph({
  graph,
  problemNodes = NO_PROBLEMS,
  problemEdges = NO_EDGE_PROBLEMS,
  title = "Graph",
}: {
  graph: SpecGraph;
  problemNodes?: ReadonlySet<string>;
  /** Datatype/shape mismatches by edgeKey(source, target) (problemEdges of the validation's messages). */
  problemEdges?: ReadonlyMap<string, EdgeProblem[]>;
  title?: string;
}) {
  const id = useId();
  const { nodes, edges } = useMemo(
    () => toFlow(graph, problemNodes, problemEdges),
    [graph, problemNodes, problemEdges],
  );
  const mismatched = graph.edges.filter((edge) => mismatchesOf(edge, problemEdges).length > 0).length;
  // React Flow owns the nodes (defaultNodes): it keeps their measured sizes,
  // and a node stays hidden until it is measured. Handing it new node objects
  // on a re-render (as a controlled prop) dropped those sizes while the DOM
  // did not resize, so nothing re-measured them and the graph stayed empty.
  // Instead, any visible change remounts the view, which measures afresh and
  // fits the new graph.
  const signature = useMemo(
    () =>
      JSON.stringify({
        nodes: nodes.map((node) => [node.id, node.className, node.ariaLabel, node.position.x, node.position.y]),
        edges: edges.map((edge) => [edge.id, edge.label, edge.className]),
      }),
    [nodes, edges],
  );
  return (
    <figure className="operator-graph" aria-labelledby={`${id}-title`} aria-describedby={`${id}-summary`}>
      <h3 id={`${id}-title`} className="chart-title">
        {title}
      </h3>
      {nodes.length > 0 ? (
        <div className="operator-graph-canvas">
          <ReactFlow
            key={signature}
            defaultNodes={nodes}
            defaultEdges={edges}
            fitView
            fitViewOptions={{ padding: 0.15 }}
            nodesDraggable={false}
            nodesConnectable={false}
            elementsSelectable={false}
            edgesFocusable={false}
            zoomOnScroll={false}
            preventScrolling={false}
            minZoom={0.2}
            maxZoom={1.5}
          >
            <Background gap={16} />
            <Controls showInteractive={false} />
          </ReactFlow>
        </div>
      ) : (
        <p className="chart-empty">Nothing to draw yet: the spec names no inputs, steps or outputs.</p>
      )}
      <figcaption id={`${id}-summary`} className="chart-summary">
        {graphSummary(graph, problemNodes)}
        {mismatched > 0
          ? ` ${mismatched} ${mismatched === 1 ? "connection does" : "connections do"} not match in datatype or shape.`
          : ""}
      </figcaption>
      <ul className="visually-hidden">
        {graph.edges.map((edge) => {
          const mismatches = mismatchesOf(edge, problemEdges);
          return (
            <li key={edge.id}>
              {edge.source.replace(/^\w+:/, "")} to {edge.target.replace(/^\w+:/, "")}: {edge.label}
              {mismatches.length > 0 ? `, mismatch: ${mismatchLabel(mismatches).slice(2)}` : ""}
            </li>
          );
        })}
      </ul>
    </figure>
  );
}

function toFlow(
  graph: SpecGraph,
  problemNodes: ReadonlySet<string>,
  problemEdges: ReadonlyMap<string, EdgeProblem[]>,
): { nodes: Node[]; edges: Edge[] } {
  const positions = layoutGraph(graph);
  const nodes: Node[] = graph.nodes.map((node) => {
    const blamed = problemNodes.has(node.id);
    return {
      id: node.id,
      type: FLOW_TYPE[node.kind],
      position: { x: positions.get(node.id)?.x ?? 0, y: positions.get(node.id)?.y ?? 0 },
      sourcePosition: Position.Bottom,
      targetPosition: Position.Top,
      className: `graph-node graph-node-${node.kind}${blamed ? " graph-node-problem" : ""}`,
      style: { width: NODE_WIDTH, minHeight: NODE_HEIGHT },
      ariaLabel: `${node.kind === "input" || node.kind === "output" ? `operator ${node.kind}` : `${node.kind} step`} ${node.title}, ${node.detail}${blamed ? ", has a problem" : ""}`,
      data: {
        label: (
          <>
            <span className="graph-node-title">
              {blamed ? <span aria-hidden="true">⚠ </span> : null}
              {node.title}
            </span>
            <span className="graph-node-detail">{node.detail}</span>
          </>
        ),
      },
    };
  });
  const edges: Edge[] = graph.edges.map((edge) => {
    const mismatches = mismatchesOf(edge, problemEdges);
    const bad = mismatches.length > 0;
    return {
      id: edge.id,
      source: edge.source,
      target: edge.target,
      label: bad ? `${edge.label} ${mismatchLabel(mismatches)}` : edge.label,
      className: `graph-edge graph-edge-${edge.kind}${bad ? " graph-edge-problem" : ""}`,
      markerEnd: {
        type: MarkerType.ArrowClosed,
        width: 16,
        height: 16,
        ...(bad ? { color: "var(--color-danger)" } : {}),
      },
      animated: edge.kind === "branch",
      labelBgPadding: [4, 2],
      labelBgBorderRadius: 3,
      // A mismatch is drawn over the others, thicker, so it cannot hide behind a crossing edge.
      ...(bad ? { zIndex: 1 } : {}),
      style: {
        strokeWidth: bad ? 2.5 : 1.5,
        ...(edge.kind === "data" ? {} : { strokeDasharray: "5 4" }),
        ...(bad ? { stroke: "var(--color-danger)" } : {}),
      },
    };
  });
  return { nodes, edges };
}
