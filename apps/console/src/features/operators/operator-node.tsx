"use client";

import { Handle, Position, type Node, type NodeProps } from "@xyflow/react";
import { useContext, type KeyboardEvent } from "react";
import type { GraphNodeKind } from "@operon/operator-spec/spec-graph";
import { formatShape } from "@operon/operator-spec/tensor-compatibility";
import type { GraphPort, NodePorts } from "./graph-ports";
import { CONTROL_IN, CONTROL_OUT, PortPickingContext, portHandleId } from "./port-picking";

export interface OperatorNodeData extends Record<string, unknown> {
  kind: GraphNodeKind;
  title: string;
  detail: string;
  blamed: boolean;
  ports: NodePorts;
}

export type OperatorFlowNode = Node<OperatorNodeData, "operator">;

/** "FP32 [-1,16]", or "?" for what is not known. */
export function portType(port: GraphPort): string {
  return `${port.datatype ?? "?"} ${port.shape === null ? "[?]" : formatShape(port.shape)}`;
}

/**
 * A graph node with its ports: inputs on the left edge, outputs on the
 * right, each a React Flow handle showing the tensor's name, datatype and
 * shape. In the editor a port is also a button (Enter/Space/click picks an
 * output, then connects it to an input; port-picking.ts), and a drag from an
 * output onto an input connects them. The text inside a port lets pointer
 * events through, so the handle itself is what lies under the cursor when a
 * drag ends there (React Flow's drop test).
 */
export function OperatorNode({ id, data }: NodeProps<OperatorFlowNode>) {
  return (
    <>
      <Handle
        type="target"
        id={CONTROL_IN}
        position={Position.Left}
        className="graph-control-handle"
        isConnectable={false}
      />
      <span className="graph-node-title">
        {data.blamed ? <span aria-hidden="true">⚠ </span> : null}
        {data.title}
      </span>
      <span className="graph-node-detail">{data.detail}</span>
      <PortList node={id} nodeTitle={data.title} side="input" ports={data.ports.inputs} />
      <PortList node={id} nodeTitle={data.title} side="output" ports={data.ports.outputs} />
      <Handle
        type="source"
        id={CONTROL_OUT}
        position={Position.Right}
        className="graph-control-handle"
        isConnectable={false}
      />
    </>
  );
}

/** A node's inputs (left edge) or outputs (right edge); nothing when it has none. */
function PortList({
  node,
  nodeTitle,
  side,
  ports,
}: {
  node: string;
  nodeTitle: string;
  side: "input" | "output";
  ports: readonly GraphPort[];
}) {
  if (ports.length === 0) return null;
  return (
    <ul className={`graph-ports graph-ports-${side === "input" ? "in" : "out"}`} aria-label={`${side}s`}>
      {ports.map((port) => (
        <li key={port.name}>
          <PortHandle node={node} nodeTitle={nodeTitle} side={side} port={port} />
        </li>
      ))}
    </ul>
  );
}

function PortHandle({
  node,
  nodeTitle,
  side,
  port,
}: {
  node: string;
  nodeTitle: string;
  side: "input" | "output";
  port: GraphPort;
}) {
  const picking = useContext(PortPickingContext);
  const ref = { node, port: port.name };
  const picked = picking?.picked?.node === node && picking.picked.port === port.name;
  const wired = port.tensor !== undefined && port.tensor !== port.name ? ` (${port.tensor})` : "";
  // Starts with the visible text (name, then type), as speech-input users say what they see.
  const label = `${port.name} ${portType(port)}, ${side} of ${nodeTitle}${port.tensor === undefined ? ", not connected" : wired}`;
  const onKeyDown = (event: KeyboardEvent) => {
    if (picking === undefined) return;
    if (event.key === "Enter" || event.key === " ") {
      event.preventDefault();
      picking.activate(ref, side);
    } else if (event.key === "Escape" && picking.picked !== undefined) {
      event.preventDefault();
      picking.cancel();
    }
  };
  return (
    <Handle
      type={side === "input" ? "target" : "source"}
      id={portHandleId(side, port.name)}
      position={side === "input" ? Position.Left : Position.Right}
      className={`graph-port graph-port-${side}${picked ? " graph-port-picked" : ""}`}
      isConnectable={picking !== undefined}
      isConnectableStart={side === "output"}
      isConnectableEnd={side === "input"}
      {...(picking !== undefined
        ? {
            role: "button",
            tabIndex: 0,
            "aria-label": label,
            ...(side === "output" ? { "aria-pressed": picked } : {}),
            onClick: () => picking.activate(ref, side),
            onKeyDown,
          }
        : {})}
    >
      <span className="graph-port-name">{port.name}</span> <span className="graph-port-type">{portType(port)}</span>
    </Handle>
  );
}
