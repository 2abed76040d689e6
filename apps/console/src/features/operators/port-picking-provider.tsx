"use client";

import { useMemo, useState, type ReactNode } from "react";
import type { NodePorts } from "./graph-ports";
import { portType } from "./operator-node";
import { PortPickingContext, type PortPicking } from "./port-picking";
import { portText, type PortRef } from "./spec-connections";

/**
 * Holds the picked output port for the graph's nodes (port-picking.ts) and
 * says what happens at each step in the graph's status line: picked,
 * cancelled, or "pick an output first".
 */
export function PortPickingProvider({
  onConnect,
  onStatus,
  ports,
  children,
}: {
  onConnect: (from: PortRef, to: PortRef) => void;
  onStatus: (message: string) => void;
  ports: ReadonlyMap<string, NodePorts>;
  children: ReactNode;
}) {
  const [picked, setPicked] = useState<PortRef | undefined>(undefined);
  const picking = useMemo<PortPicking>(
    () => ({
      picked,
      activate(ref, side) {
        if (side === "output") {
          if (picked !== undefined && picked.node === ref.node && picked.port === ref.port) {
            setPicked(undefined);
            onStatus("No output picked.");
            return;
          }
          const port = ports.get(ref.node)?.outputs.find((entry) => entry.name === ref.port);
          setPicked(ref);
          onStatus(
            `Picked output ${portText(ref)}${port ? ` (${portType(port)})` : ""}: press Enter on an input port to connect it, or Escape to cancel.`,
          );
          return;
        }
        if (picked === undefined) {
          onStatus(`To connect ${portText(ref)}, first pick an output port (Enter), then this input.`);
          return;
        }
        setPicked(undefined);
        onConnect(picked, ref);
      },
      cancel() {
        setPicked(undefined);
        onStatus("No output picked.");
      },
    }),
    [picked, ports, onConnect, onStatus],
  );
  return <PortPickingContext.Provider value={picking}>{children}</PortPickingContext.Provider>;
}
