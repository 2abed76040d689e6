import type { SpecGraphEdge } from "@operon/operator-spec/spec-graph";
import type { EdgeProblem } from "@operon/operator-spec/problem-subjects";
import { mismatchLabel } from "./mismatch-label";
import { portText } from "./spec-connections";

/** "in:A" → "A", "step:first" → "first". */
export const nodeName = (id: string): string => id.replace(/^\w+:/, "");

/**
 * The graph's connections in words: for screen readers always, and in the
 * editor a visible list where each data connection has its Remove button
 * (the keyboard's way to remove what a drag made), and so does each route's
 * branch and exit's answer (added with control-edge-forms.tsx).
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
                {removeLabel(edge) !== undefined ? (
                  <button
                    type="button"
                    className="button"
                    aria-label={removeLabel(edge)}
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

/** What a connection's Remove button says to assistive technology; undefined: nothing to remove. */
function removeLabel(edge: SpecGraphEdge): string | undefined {
  if (edge.kind === "data")
    return edge.targetPort === undefined
      ? undefined
      : `Remove the connection ${portText({ node: edge.source, port: edge.sourcePort ?? "" })} → ${portText({ node: edge.target, port: edge.targetPort })}`;
  if (edge.kind === "branch")
    return edge.branch === undefined
      ? undefined
      : `Remove the branch ${nodeName(edge.source)} → ${nodeName(edge.target)} (${edge.label})`;
  return `Remove exit ${nodeName(edge.source)}'s answer for ${nodeName(edge.target)}`;
}
