import type { Locator, Page } from "playwright-core";

/**
 * Reading the console's charts as a person (and a screen reader) does: each
 * is a figure named by its title whose caption sums it up in words, drawn as
 * an SVG by recharts.
 */
export function chartFigure(scope: Page | Locator, title: string): Locator {
  return scope.getByRole("figure", { name: title, exact: true });
}

/** The chart's drawing (recharts' main SVG, not its legend icons). */
export function chartSurface(figure: Locator): Locator {
  return figure.locator(".recharts-wrapper > svg.recharts-surface");
}

/** The numbers of a caption such as "Requests/s: 3 points, latest 0.5, highest 2.1." for one series. */
export async function seriesFigures(
  figure: Locator,
  seriesLabel: string,
): Promise<{ points: number; latest: number; highest: number } | undefined> {
  const caption = (await figure.locator("figcaption").textContent()) ?? "";
  const escaped = seriesLabel.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const numeral = "([\\d,]+(?:\\.\\d+)?)";
  const match = new RegExp(`${escaped}: (\\d+) points?, latest ${numeral}[^,;]*, highest ${numeral}`).exec(caption);
  if (!match) return undefined;
  const number = (text: string) => Number(text.replace(/,/g, ""));
  return { points: Number(match[1]), latest: number(match[2]!), highest: number(match[3]!) };
}

/** Marked points (circles) the chart's SVG draws for its lines. */
export async function drawnPoints(figure: Locator): Promise<number> {
  return chartSurface(figure).locator(".recharts-line-dots circle").count();
}

/** Polls `read` until `accept` holds or the time is up; returns the last value read. */
export async function pollUntil<T>(
  read: () => Promise<T>,
  accept: (value: T) => boolean,
  timeoutMs: number,
  everyMs = 500,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (accept(value) || Date.now() >= deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
