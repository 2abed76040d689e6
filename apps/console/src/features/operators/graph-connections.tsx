import type { SpecGraphEdge } from "@operon/operator-spec/spec-graph";
import type { EdgeProblem } from "@operon/operator-spec/problem-subjects";
import { mismatchLabel } from "./mismatch-label";
import { portText } from "./spec-connections";

/** "in:A" → "A", "step:first" → "first". */
export const nodeName = (id: string): string => id.replace(/^\w+:/, "");

/**
 * The graph's connections in words: for screen readers always, and in the
 * editor a visible list where each data connection has its Remove button
 * (the keyboard's way to remove what a drag made; a route's branches and an
 * exit's answers are edited in the spec).
 */
export function GraphConnections({
  id,
  edges,
  mismatchesOf,
  onRemove,
}: {
  id: string;
  edges: readonly SpecGraphEdge[];
  mismatchesOf: (edge: SpecGraphEdge) => EdgeProblem[];
  onRemove?: ((edge: SpecGraphEdge) => void) | undefined;
}) {
  const describe = (edge: SpecGraphEdge) => `${nodeName(edge.source)} to ${nodeName(edge.target)}: ${edge.label}`;
  if (onRemove === undefined)
    return (
      <ul className="visually-hidden">
        {edges.map((edge) => {
          const mismatches = mismatchesOf(edge);
          return (
            <li key={edge.id}>
              {describe(edge)}
              {mismatches.length > 0 ? `, mismatch: ${mismatchLabel(mismatches).slice(2)}` : ""}
            </li>
          );
        })}
      </ul>
    );
  return (
    <div className="graph-connections">
      <h4 id={`${id}-connections`}>Connections</h4>
      {edges.length === 0 ? (
        <p className="muted small">None yet: drag from an output port to an input port, or pick them with Enter.</p>
      ) : (
        <ul aria-labelledby={`${id}-connections`}>
          {edges.map((edge) => {
            const mismatches = mismatchesOf(edge);
            return (
              <li key={edge.id} className={mismatches.length > 0 ? "graph-connection-problem" : undefined}>
                <span>
                  {describe(edge)}
                  {mismatches.length > 0 ? ` ${mismatchLabel(mismatches)}` : ""}
                </span>
                {edge.kind === "data" && edge.targetPort !== undefined ? (
                  <button
                    type="button"
                    className="button"
                    aria-label={`Remove the connection ${portText({ node: edge.source, port: edge.sourcePort ?? "" })} → ${portText({ node: edge.target, port: edge.targetPort })}`}
                    onClick={() => onRemove(edge)}
                  >
                    Remove
                  </button>
                ) : null}
              </li>
            );
          })}
        </ul>
      )}
    </div>
  );
}
