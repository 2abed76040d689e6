import { inputNodeId, outputNodeId, stepNodeId } from "./spec-graph.js";

/**
 * The graph nodes (spec-graph.ts) a validation problem names. Problem
 * messages (operator-structure.ts here, the gateway's checks against its
 * models) name steps as "step 'id'", "route 'id'" or "exit 'id'" and
 * operator tensors as "operator input 'A'" / "operator output 'Y'".
 */
const STEP_REFERENCE = /\b(?:step|route|exit) '([^']+)'/g;
const TENSOR_REFERENCE = /\boperator (input|output) '([^']+)'/g;

export function problemNodeIds(messages: readonly string[]): Set<string> {
  const ids = new Set<string>();
  for (const message of messages) {
    for (const match of message.matchAll(STEP_REFERENCE)) ids.add(stepNodeId(match[1]!));
    for (const match of message.matchAll(TENSOR_REFERENCE))
      ids.add(match[1] === "input" ? inputNodeId(match[2]!) : outputNodeId(match[2]!));
  }
  return ids;
}

/**
 * A datatype or shape mismatch the gateway found on a connection, keyed by
 * the graph edge it belongs on (`edgeKey(source, target)`). The gateway's
 * edge checks (operator-validation.ts) write "tensor 't' from <producer> to
 * <consumer>: datatype X does not match Y" (or "shape [..] does not match
 * [..]"); the producer is an operator input or a step, the consumer a step,
 * an operator output, or an operator output an exit answers ("operator
 * output 'Y' (exit 'e')", drawn as the exit's edge to Y).
 */
export interface EdgeProblem {
  tensor: string;
  what: "datatype" | "shape";
  /** What the producer gives and what the consumer takes, as the gateway wrote them. */
  given: string;
  expected: string;
  message: string;
}

const EDGE_MISMATCH = /^tensor '([^']+)' from (.+?) to (.+?): (datatype|shape) (.+?) does not match (.+)$/;

export const edgeKey = (source: string, target: string): string => `${source}->${target}`;

export function problemEdges(messages: readonly string[]): Map<string, EdgeProblem[]> {
  const edges = new Map<string, EdgeProblem[]>();
  for (const message of messages) {
    const match = EDGE_MISMATCH.exec(message);
    if (match === null) continue;
    const [, tensor, from, to, what, given, expected] = match as unknown as [
      string,
      string,
      string,
      string,
      "datatype" | "shape",
      string,
      string,
    ];
    const source = endNode(from, "input");
    const exit = /^operator output '[^']+' \(exit '([^']+)'\)/.exec(to);
    const target = endNode(to, "output");
    if (source === undefined || target === undefined) continue;
    const key = exit !== null ? edgeKey(stepNodeId(exit[1]!), target) : edgeKey(source, target);
    edges.set(key, [...(edges.get(key) ?? []), { tensor, what, given, expected, message }]);
  }
  return edges;
}

/** The node a producer ("operator input 'A'", "step 'x' (...)") or consumer ("operator output 'Y'", "step 'x' (...)") names. */
function endNode(text: string, operatorSide: "input" | "output"): string | undefined {
  const step = /^step '([^']+)'/.exec(text);
  if (step !== null) return stepNodeId(step[1]!);
  const tensor = new RegExp(`^operator ${operatorSide} '([^']+)'`).exec(text);
  if (tensor === null) return undefined;
  return operatorSide === "input" ? inputNodeId(tensor[1]!) : outputNodeId(tensor[1]!);
}
