// Relative imports only: unit-tested outside Next.

/** "1 h 4 min", "3 min 20 s", "12 s": time left at the job's rate; "–" when unknown. */
export function timeLeft(seconds: number | null): string {
  if (seconds === null || !Number.isFinite(seconds)) return "–";
  const s = Math.max(0, Math.ceil(seconds));
  if (s >= 3600) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  if (s >= 60) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${s} s`;
}

/** Parses the mapping box: one `INPUT=col1,col2` (numbers into a tensor) or `INPUT=text:col` / `image-path:col` / `image-bytes:col` a line. */
export type MappingLine =
  | { input: string; kind: "tensor"; columns: string[] }
  | { input: string; kind: "text" | "image-path" | "image-bytes"; column: string };

export function parseMappingLines(text: string): { mapping: MappingLine[]; problem?: string } {
  const mapping: MappingLine[] = [];
  for (const [index, raw] of text.split("\n").entries()) {
    const line = raw.trim();
    if (line === "") continue;
    const match = /^([^=\s]+)\s*=\s*(?:(text|image-path|image-bytes):)?(.+)$/.exec(line);
    if (match === null) return { mapping, problem: `line ${index + 1}: write INPUT=col1,col2 or INPUT=text:column` };
    const [, input = "", kind, rest = ""] = match;
    if (kind === undefined)
      mapping.push({
        input,
        kind: "tensor",
        columns: rest
          .split(",")
          .map((column) => column.trim())
          .filter(Boolean),
      });
    else mapping.push({ input, kind: kind as "text", column: rest.trim() });
  }
  return { mapping };
}
