import type { Diagnostic } from "@codemirror/lint";
import { scanJson, samePath, type JsonSpan } from "./spec-json-scan";

/**
 * Where in the editor's text the gateway's problems are: each problem names
 * steps ("step 'a'", "route 'r'", "exit 'e'", "steps[2]") and operator
 * tensors ("operator input 'A'", "inputs[0]") the way problem-subjects.ts
 * reads them; a problem is marked on the line of each element it names, or
 * on its field when the message goes on with a field the element has
 * ("step 'a': model 'x' is not served" marks the step's "model").
 * Problems that name nothing stay in the list beside the editor only.
 */
const SUBJECTS =
  /\b(?:(step|route|exit) '([^']+)'|operator (input|output) '([^']+)'|(?<![.\w])(steps|inputs|outputs)\[(\d+)\])(?::\s*([A-Za-z]+))?/g;

export function problemDiagnostics(text: string, problems: readonly string[]): Diagnostic[] {
  if (problems.length === 0) return [];
  const { spans } = scanJson(text);
  const element = (list: string, index: number) => spans.find((span) => samePath(span.path, [list, index]));
  const named = (list: string, field: string, name: string): number | undefined => {
    const span = spans.find(
      (candidate) =>
        candidate.path.length === 3 &&
        candidate.path[0] === list &&
        candidate.path[2] === field &&
        candidate.string === name,
    );
    return span ? (span.path[1] as number) : undefined;
  };

  const diagnostics: Diagnostic[] = [];
  const seen = new Set<string>();
  for (const message of problems) {
    for (const match of message.matchAll(SUBJECTS)) {
      let list: string;
      let index: number | undefined;
      if (match[2] !== undefined) [list, index] = ["steps", named("steps", "id", match[2])];
      else if (match[4] !== undefined)
        [list, index] = [
          match[3] === "input" ? "inputs" : "outputs",
          named(match[3] === "input" ? "inputs" : "outputs", "name", match[4]),
        ];
      else [list, index] = [match[5]!, Number(match[6])];
      if (index === undefined) continue;
      const span = element(list, index);
      if (!span) continue;
      const field =
        match[7] !== undefined
          ? spans.find((candidate) => samePath(candidate.path, [list, index, match[7]!]))
          : undefined;
      const [from, to] = field ? [field.keyFrom ?? field.from, field.to] : firstLine(text, span);
      const key = `${from}:${message}`;
      if (seen.has(key)) continue;
      seen.add(key);
      diagnostics.push({ from, to, severity: "error", source: "gateway", message });
    }
  }
  return diagnostics.sort((a, b) => a.from - b.from);
}

/** An element's first line (the whole element when it fits on one). */
function firstLine(text: string, span: JsonSpan): [number, number] {
  const end = text.indexOf("\n", span.from);
  return [span.from, end === -1 || end > span.to ? span.to : end];
}
