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
