/**
 * A set of row indices as sorted, disjoint, non-adjacent [start, end)
 * ranges: a job's checkpoint (the rows whose result or failure is stored).
 */
export type RowRange = [start: number, end: number];

/** The ranges with [start, end) added, merged. */
export function addRange(ranges: readonly RowRange[], start: number, end: number): RowRange[] {
  if (end <= start) return ranges.map(([a, b]) => [a, b]);
  const out: RowRange[] = [];
  let from = start;
  let to = end;
  let placed = false;
  for (const [a, b] of ranges) {
    if (b < from) out.push([a, b]);
    else if (a > to) {
      if (!placed) {
        out.push([from, to]);
        placed = true;
      }
      out.push([a, b]);
    } else {
      from = Math.min(from, a);
      to = Math.max(to, b);
    }
  }
  if (!placed) out.push([from, to]);
  return out;
}

export function rowsIn(ranges: readonly RowRange[]): number {
  return ranges.reduce((sum, [a, b]) => sum + (b - a), 0);
}

/** The ranges of [0, total) not in `done`, in order. */
export function missingRanges(done: readonly RowRange[], total: number): RowRange[] {
  const out: RowRange[] = [];
  let at = 0;
  for (const [a, b] of done) {
    if (a > at) out.push([at, Math.min(a, total)]);
    at = Math.max(at, b);
    if (at >= total) break;
  }
  if (at < total) out.push([at, total]);
  return out.filter(([a, b]) => b > a);
}

/** Splits ranges into chunks of at most `size` rows. */
export function chunksOf(ranges: readonly RowRange[], size: number): RowRange[] {
  const out: RowRange[] = [];
  for (const [a, b] of ranges) for (let at = a; at < b; at += size) out.push([at, Math.min(b, at + size)]);
  return out;
}

/** Parses a stored checkpoint (JSON), refusing anything but sorted disjoint integer ranges. */
export function parseRanges(value: unknown): RowRange[] {
  if (!Array.isArray(value)) throw new Error("the checkpoint is not a list of ranges");
  let ranges: RowRange[] = [];
  for (const item of value) {
    if (!Array.isArray(item) || item.length !== 2 || !item.every((n) => Number.isSafeInteger(n) && n >= 0))
      throw new Error(`the checkpoint holds ${JSON.stringify(item)}, not a [start, end) range`);
    ranges = addRange(ranges, item[0] as number, item[1] as number);
  }
  return ranges;
}

/** The ranges without the given rows (retried rows leave the checkpoint). */
export function removeRows(ranges: readonly RowRange[], rows: readonly number[]): RowRange[] {
  const drop = [...new Set(rows)].sort((a, b) => a - b);
  const out: RowRange[] = [];
  for (const [a, b] of ranges) {
    let at = a;
    for (const row of drop) {
      if (row < at || row >= b) continue;
      if (row > at) out.push([at, row]);
      at = row + 1;
    }
    if (at < b) out.push([at, b]);
  }
  return out;
}
