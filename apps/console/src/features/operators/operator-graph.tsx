"use client";

import "@xyflow/react/dist/style.css";
import {
  applyNodeChanges,
  Background,
  Controls,
  MarkerType,
  ReactFlow,
  useNodesInitialized,
  useReactFlow,
  type Connection,
  type Edge,
  type NodeChange,
} from "@xyflow/react";
import { useEffect, useId, useMemo, useRef, useState } from "react";
import { layoutGraph, NODE_WIDTH, nodeHeight } from "./graph-layout";
import { graphSummary } from "./graph-summary";
import type { SpecGraph, SpecGraphEdge } from "@operon/operator-spec/spec-graph";
import { edgeKey, type EdgeProblem } from "@operon/operator-spec/problem-subjects";
import type { NodePorts } from "./graph-ports";
import { ControlEdgeForms, type ControlEditing } from "./control-edge-forms";
import { GraphConnections, nodeName } from "./graph-connections";
import { mismatchLabel } from "./mismatch-label";
import { OperatorNode, type OperatorFlowNode } from "./operator-node";
import { CONTROL_IN, CONTROL_OUT, portHandleId, portOfHandle } from "./port-picking";
import { PortPickingProvider } from "./port-picking-provider";
import { type EditOutcome, portMismatch, portText, type PortRef } from "./spec-connections";
import { useRestoredPortFocus } from "./use-restored-port-focus";

/**
 * The operator's topology, drawn with React Flow, left to right: each node
 * shows its ports (tensor name, datatype, shape), inputs on the left and
 * outputs on the right. Zoomable from its controls, with the same graph in
 * words for screen readers. Nodes the validation blames are marked; a
 * connection whose ends disagree on datatype or shape (the gateway's edge
 * check, asked as the spec is typed) is drawn in the danger colour with the
 * mismatch written on the edge itself ("⚠ FP32 → INT64"), before anything is
 * saved.
 *
 * With `editing` (the operator editor), ports connect: drag from an output
 * port onto an input port, or pick both with Enter (port-picking.ts); each
 * connection in the list below the graph can be removed. The edits go to
 * the spec (spec-connections.ts) and the graph is redrawn from it. A
 * route's branches and an exit's answers are added with the forms under
 * the graph (control-edge-forms.tsx) and removed from the same list.
 */
const NO_PROBLEMS: ReadonlySet<string> = new Set();
const NO_EDGE_PROBLEMS: ReadonlyMap<string, EdgeProblem[]> = new Map();
const NO_PORTS: ReadonlyMap<string, NodePorts> = new Map();
const EMPTY_PORTS: NodePorts = { inputs: [], outputs: [] };
const NODE_TYPES = { operator: OperatorNode };

/** The editor's edits on its spec; each says why when it could not be made. */
export interface GraphEditing {
  connect(from: PortRef, to: PortRef): EditOutcome;
  disconnect(to: PortRef): EditOutcome;
  /** Routes' branches and exits' answers (control-edge-forms.tsx). */
  control?: ControlEditing | undefined;
}

/** The mismatches on one drawn edge (its source and target nodes). */
function mismatchesOf(edge: SpecGraphEdge, problemEdges: ReadonlyMap<string, EdgeProblem[]>): EdgeProblem[] {
  return problemEdges.get(edgeKey(edge.source, edge.target)) ?? [];
}

export function OperatorGraph({
  graph,
  ports = NO_PORTS,
  problemNodes = NO_PROBLEMS,
  problemEdges = NO_EDGE_PROBLEMS,
  title = "Graph",
  editing,
}: {
  graph: SpecGraph;
  /** Each node's ports (graph-ports.ts); nodes without an entry are drawn without ports. */
  ports?: ReadonlyMap<string, NodePorts>;
  problemNodes?: ReadonlySet<string>;
  /** Datatype/shape mismatches by edgeKey(source, target) (problemEdges of the validation's messages). */
  problemEdges?: ReadonlyMap<string, EdgeProblem[]>;
  title?: string;
  /** Makes the ports connectable and the connections removable. */
  editing?: GraphEditing | undefined;
}) {
  const id = useId();
  const canvas = useRef<HTMLDivElement>(null);
  const [status, setStatus] = useState("");
  const { nodes, edges } = useMemo(
    () => toFlow(graph, ports, problemNodes, problemEdges),
    [graph, ports, problemNodes, problemEdges],
  );
  const mismatched = graph.edges.filter((edge) => mismatchesOf(edge, problemEdges).length > 0).length;
  // Controlled nodes that keep what React Flow measured: it hides a node
  // until it is measured and measures again only when the element resizes,
  // so new node objects without their sizes (the spec changed, the DOM did
  // not resize) would stay hidden. Each redraw takes the measured size of
  // the node with the same id; a node that does change size is measured
  // again by React Flow (onNodesChange). The view is never remounted, so
  // the elements (and the keyboard's focus on a port) stay where they are.
  const [flowNodes, setFlowNodes] = useState(nodes);
  const [drawn, setDrawn] = useState(nodes);
  if (drawn !== nodes) {
    setDrawn(nodes);
    setFlowNodes((current) => keepMeasured(nodes, current));
  }
  const onNodesChange = (changes: NodeChange<OperatorFlowNode>[]) =>
    setFlowNodes((current) => applyNodeChanges(changes, current));
  const layout = useMemo(
    () => JSON.stringify(nodes.map((node) => [node.id, node.position.x, node.position.y])),
    [nodes],
  );
  // What is visible: a port removed or renamed with the keyboard on it still needs its focus restored.
  const signature = useMemo(
    () =>
      JSON.stringify({
        nodes: nodes.map((node) => [node.id, node.className, node.ariaLabel, node.position, node.data.ports]),
        edges: edges.map((edge) => [edge.id, edge.label, edge.className, edge.sourceHandle, edge.targetHandle]),
      }),
    [nodes, edges],
  );
  const focusKeeping = useRestoredPortFocus(canvas, signature);

  const connect = (from: PortRef, to: PortRef): void => {
    if (editing === undefined) return;
    const outcome = editing.connect(from, to);
    setStatus(outcome.ok ? connectedText(from, to, ports) : `Not connected: ${outcome.message}.`);
  };
  const onConnect = (connection: Connection): void => {
    const fromPort = portOfHandle(connection.sourceHandle);
    const toPort = portOfHandle(connection.targetHandle);
    if (fromPort === undefined || toPort === undefined) return;
    connect({ node: connection.source, port: fromPort }, { node: connection.target, port: toPort });
  };
  const remove = (edge: SpecGraphEdge): void => {
    if (editing === undefined) return;
    const control = editing.control;
    let outcome: EditOutcome;
    let done: string;
    if (edge.kind === "branch" && edge.branch !== undefined && control !== undefined) {
      outcome = control.removeBranch(nodeName(edge.source), edge.branch, nodeName(edge.target));
      done = `Removed the branch ${nodeName(edge.source)} → ${nodeName(edge.target)} (${edge.label}).`;
    } else if (edge.kind === "answer" && control !== undefined) {
      outcome = control.removeExitAnswer(nodeName(edge.source), nodeName(edge.target));
      done = `Removed exit ${nodeName(edge.source)}'s answer for ${nodeName(edge.target)}.`;
    } else if (edge.kind === "data" && edge.targetPort !== undefined) {
      outcome = editing.disconnect({ node: edge.target, port: edge.targetPort });
      done = `Removed the connection ${portText({ node: edge.source, port: edge.sourcePort ?? "" })} → ${portText({ node: edge.target, port: edge.targetPort })}.`;
    } else {
      return;
    }
    setStatus(outcome.ok ? done : `Not removed: ${outcome.message}.`);
  };

  const flow = (
    <ReactFlow
      nodes={flowNodes}
      edges={edges}
      onNodesChange={onNodesChange}
      nodeTypes={NODE_TYPES}
      fitView
      fitViewOptions={{ padding: 0.1 }}
      nodesDraggable={false}
      nodesConnectable={editing !== undefined}
      connectOnClick={false}
      onConnect={onConnect}
      isValidConnection={(edge) => edge.source !== edge.target}
      elementsSelectable={false}
      edgesFocusable={false}
      zoomOnScroll={false}
      preventScrolling={false}
      minZoom={0.2}
      maxZoom={1.5}
    >
      <Background gap={16} />
      <Controls showInteractive={false} />
      <FitWhenLaidOut layout={layout} />
    </ReactFlow>
  );
  return (
    <figure className="operator-graph" aria-labelledby={`${id}-title`} aria-describedby={`${id}-summary`}>
      <h3 id={`${id}-title`} className="chart-title">
        {title}
      </h3>
      {editing !== undefined ? (
        <p id={`${id}-how`} className="field-hint">
          Drag from an output port (right side of a node) onto an input port (left side) to connect them, or press Enter
          on an output port, then on an input port. Escape cancels.
        </p>
      ) : null}
      {nodes.length > 0 ? (
        <div className="operator-graph-canvas" ref={canvas} {...focusKeeping}>
          {editing !== undefined ? (
            <PortPickingProvider onConnect={connect} onStatus={setStatus} ports={ports}>
              {flow}
            </PortPickingProvider>
          ) : (
            flow
          )}
        </div>
      ) : (
        <p className="chart-empty">Nothing to draw yet: the spec names no inputs, steps or outputs.</p>
      )}
      {editing?.control !== undefined ? <ControlEdgeForms control={editing.control} onStatus={setStatus} /> : null}
      {editing !== undefined ? (
        <p className="graph-status" role="status">
          {status}
        </p>
      ) : null}
      <figcaption id={`${id}-summary`} className="chart-summary">
        {graphSummary(graph, problemNodes)}
        {mismatched > 0
          ? ` ${mismatched} ${mismatched === 1 ? "connection does" : "connections do"} not match in datatype or shape.`
          : ""}
      </figcaption>
      <GraphConnections
        id={id}
        edges={graph.edges}
        mismatchesOf={(edge) => mismatchesOf(edge, problemEdges)}
        onRemove={editing !== undefined ? remove : undefined}
      />
    </figure>
  );
}

/** The new nodes, each with the size React Flow measured for the node of the same id (if any). */
function keepMeasured(next: OperatorFlowNode[], current: OperatorFlowNode[]): OperatorFlowNode[] {
  const measured = new Map(current.map((node) => [node.id, node.measured]));
  return next.map((node) => {
    const size = measured.get(node.id);
    return size === undefined ? node : { ...node, measured: size };
  });
}

/** Fits the view to the graph once its nodes are measured, and again whenever the layout changes (fitView alone fits once). */
function FitWhenLaidOut({ layout }: { layout: string }) {
  const { fitView } = useReactFlow();
  const measured = useNodesInitialized();
  useEffect(() => {
    if (measured) void fitView({ padding: 0.1 });
  }, [layout, measured, fitView]);
  return null;
}

/** "Connected A → first · INPUT0.", with the mismatch at once when the ports' types are known to disagree. */
function connectedText(from: PortRef, to: PortRef, ports: ReadonlyMap<string, NodePorts>): string {
  const fromPort = ports.get(from.node)?.outputs.find((port) => port.name === from.port);
  const toPort = ports.get(to.node)?.inputs.find((port) => port.name === to.port);
  const text = `Connected ${portText(from)} → ${portText(to)}.`;
  const mismatch = fromPort && toPort ? portMismatch(fromPort, toPort) : undefined;
  return mismatch === undefined
    ? text
    : `${text} ${mismatchLabel([mismatch])}: the ends do not match, so the operator cannot be saved until this is fixed.`;
}

function toFlow(
  graph: SpecGraph,
  ports: ReadonlyMap<string, NodePorts>,
  problemNodes: ReadonlySet<string>,
  problemEdges: ReadonlyMap<string, EdgeProblem[]>,
): { nodes: OperatorFlowNode[]; edges: Edge[] } {
  const portsOf = (node: string): NodePorts => ports.get(node) ?? EMPTY_PORTS;
  const heights = new Map(
    graph.nodes.map((node) => [node.id, nodeHeight(portsOf(node.id).inputs.length + portsOf(node.id).outputs.length)]),
  );
  const positions = layoutGraph(graph, heights);
  const nodes: OperatorFlowNode[] = graph.nodes.map((node) => {
    const blamed = problemNodes.has(node.id);
    return {
      id: node.id,
      type: "operator",
      position: { x: positions.get(node.id)?.x ?? 0, y: positions.get(node.id)?.y ?? 0 },
      className: `graph-node graph-node-${node.kind}${blamed ? " graph-node-problem" : ""}`,
      style: { width: NODE_WIDTH, minHeight: heights.get(node.id) },
      ariaLabel: `${node.kind === "input" || node.kind === "output" ? `operator ${node.kind}` : `${node.kind} step`} ${node.title}, ${node.detail}${blamed ? ", has a problem" : ""}`,
      data: { kind: node.kind, title: node.title, detail: node.detail, blamed, ports: portsOf(node.id) },
    };
  });
  // Which handle each end attaches to: data edges by their ports, the rest by the hidden control handles.
  const hasPort = (node: string, side: "inputs" | "outputs", port: string | undefined): boolean =>
    port !== undefined && portsOf(node)[side].some((entry) => entry.name === port);
  const handles = (edge: SpecGraphEdge): { sourceHandle: string; targetHandle: string } => {
    const answered = edge.kind === "answer" ? portsOf(edge.target).inputs[0]?.name : undefined;
    return {
      sourceHandle: hasPort(edge.source, "outputs", edge.sourcePort)
        ? portHandleId("output", edge.sourcePort!)
        : CONTROL_OUT,
      targetHandle: hasPort(edge.target, "inputs", edge.targetPort)
        ? portHandleId("input", edge.targetPort!)
        : answered !== undefined
          ? portHandleId("input", answered)
          : CONTROL_IN,
    };
  };
  const edges: Edge[] = graph.edges.map((edge) => {
    const mismatches = mismatchesOf(edge, problemEdges);
    const bad = mismatches.length > 0;
    return {
      id: edge.id,
      source: edge.source,
      target: edge.target,
      ...handles(edge),
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
