/**
 * JSON for people: like JSON.stringify(value, null, 2), except that arrays
 * and objects that fit on one line (dims, tensor mappings, a tensor's
 * declaration) stay on one line.
 */
const LINE_WIDTH = 100;

export function compactJson(value: unknown, indent = ""): string {
  const inline = inlineJson(value);
  if (typeof value !== "object" || value === null || indent.length + inline.length <= LINE_WIDTH) return inline;
  const inner = `${indent}  `;
  if (Array.isArray(value))
    return `[\n${value.map((item) => `${inner}${compactJson(item, inner)}`).join(",\n")}\n${indent}]`;
  const entries = definedEntries(value);
  return `{\n${entries.map(([key, item]) => `${inner}${JSON.stringify(key)}: ${compactJson(item, inner)}`).join(",\n")}\n${indent}}`;
}

function inlineJson(value: unknown): string {
  if (Array.isArray(value))
    return `[${value.map((item) => (item === undefined ? "null" : inlineJson(item))).join(", ")}]`;
  if (typeof value === "object" && value !== null) {
    const entries = definedEntries(value);
    return entries.length === 0
      ? "{}"
      : `{ ${entries.map(([key, item]) => `${JSON.stringify(key)}: ${inlineJson(item)}`).join(", ")} }`;
  }
  return JSON.stringify(value) ?? "null";
}

function definedEntries(value: object): Array<[string, unknown]> {
  return Object.entries(value).filter(([, item]) => item !== undefined && typeof item !== "function");
}
