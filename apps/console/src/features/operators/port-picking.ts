import { createContext } from "react";
import type { PortRef } from "./spec-connections";

/**
 * The graph editor's keyboard (and click) path to a connection: activate an
 * output port (Enter, Space or a click) to pick it, then an input port to
 * connect the two; Escape or activating the picked port again cancels.
 * Dragging from port to port does the same in one gesture.
 *
 * Shared with the nodes through context rather than node data: a pick
 * changes no node, so nothing in the graph is redrawn for it.
 */
export interface PortPicking {
  /** The output port picked as the connection's start, if any. */
  picked: PortRef | undefined;
  activate(ref: PortRef, side: "input" | "output"): void;
  cancel(): void;
}

/** Undefined: a read-only graph (ports are drawn, not interactive). */
export const PortPickingContext = createContext<PortPicking | undefined>(undefined);

/** The React Flow handle id of a port: "in:INPUT0", "out:OUTPUT0" (names are unique per side of a node). */
export function portHandleId(side: "input" | "output", name: string): string {
  return `${side === "input" ? "in" : "out"}:${name}`;
}

/** The port name of a handle id portHandleId wrote; undefined for any other handle (the hidden control handles). */
export function portOfHandle(handle: string | null | undefined): string | undefined {
  const match = /^(?:in|out):(.*)$/s.exec(handle ?? "");
  return match === null ? undefined : match[1];
}

/** Hidden handles that branch and exit edges attach to (routes and exits have no data outputs). */
export const CONTROL_IN = "control-in";
export const CONTROL_OUT = "control-out";
