/**
 * Series colours: distinguishable for the common colour-vision deficiencies
 * (Okabe–Ito order, darkened where needed for 3:1 against white).
 */
export const CHART_PALETTE = [
  "#1f5fbf",
  "#c2410c",
  "#047857",
  "#a21caf",
  "#b45309",
  "#0e7490",
  "#be123c",
  "#4d5561",
  "#6d28d9",
  "#3f6212",
] as const;

export function seriesColor(index: number): string {
  return CHART_PALETTE[index % CHART_PALETTE.length]!;
}

/**
 * Colours by meaning, so "p99" or "errors" look the same on every chart; each
 * meaning its own colour, so p50 is not read as the requests line beside it.
 */
export const SERIES_COLORS = {
  primary: "#1f5fbf",
  p50: "#6d28d9",
  p90: "#047857",
  p95: "#b45309",
  p99: "#be123c",
  avg: "#4d5561",
  error: "#b3261e",
} as const;
