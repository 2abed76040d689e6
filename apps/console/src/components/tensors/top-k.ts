/** The k largest values of a numeric tensor (flat index and value), largest first; [] for non-numeric data. */
export function topK(data: readonly unknown[], k: number): Array<{ index: number; value: number }> {
  if (data.length < 2 || !data.every((value) => typeof value === "number" && Number.isFinite(value))) return [];
  const values = data as readonly number[];
  // One pass with a small sorted list: a 1,000-class output costs 1,000 × k comparisons, not a full sort.
  const best: Array<{ index: number; value: number }> = [];
  for (let index = 0; index < values.length; index += 1) {
    const value = values[index]!;
    if (best.length === k && value <= best[k - 1]!.value) continue;
    let at = best.length;
    while (at > 0 && best[at - 1]!.value < value) at -= 1;
    best.splice(at, 0, { index, value });
    if (best.length > k) best.pop();
  }
  return best;
}
