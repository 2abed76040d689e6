import { canonicalSpec } from "@operon/operator-spec/canonical-spec";
import { compactJson } from "./compact-json";

/**
 * The editor's text ↔ the spec object. The spec's `name` is the operator's
 * (the Name field), so the text leaves it out.
 */
export type ParsedSpec = { ok: true; spec: Record<string, unknown> } | { ok: false; message: string };

export function parseSpecText(text: string): ParsedSpec {
  if (text.trim() === "")
    return { ok: false, message: "The spec is empty: write a JSON object with inputs, outputs and steps." };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, message: `Not valid JSON: ${jsonErrorWhere(text, error)}` };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    return { ok: false, message: "The spec must be a JSON object { inputs, outputs, steps }." };
  return { ok: true, spec: value as Record<string, unknown> };
}

/** The editor's text for a stored spec: its keys in the usual order, without the name. */
export function specText(spec: Record<string, unknown>): string {
  const { name: _name, ...rest } = canonicalSpec(spec);
  return compactJson(rest);
}

/** V8 names the offending character's position; people read line and column. */
function jsonErrorWhere(text: string, error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const position = /position (\d+)/.exec(message);
  if (!position) return message;
  const offset = Number(position[1]);
  const before = text.slice(0, offset);
  const line = before.split("\n").length;
  const column = offset - before.lastIndexOf("\n");
  return `${message.replace(/ in JSON at position \d+.*$/, "").replace(/\s*\(line \d+ column \d+\)$/, "")} at line ${line}, column ${column}`;
}
