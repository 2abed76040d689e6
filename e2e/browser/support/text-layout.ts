import type { Locator } from "playwright-core";

/** A place where the browser wrapped a line between two letters or digits of one short word. */
export interface MidWordBreak {
  text: string;
  /** The text around the break, with "|" where the line ends. */
  at: string;
}

/**
 * Lines that break inside a word in the cells, headers and facts under
 * `scope` (`ada@example.c|om`, `onnxruntime_on|nx`). Breaks at spaces,
 * punctuation or <wbr> are fine; so are breaks inside runs of letters and
 * digits longer than `longRun` (hashes and keys cannot wrap anywhere else).
 */
export async function midWordBreaks(scope: Locator, longRun = 24): Promise<MidWordBreak[]> {
  return scope.evaluate((element, maxRun) => {
    const found: Array<{ text: string; at: string }> = [];
    const word = /[\p{L}\p{N}]/u;
    const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
    const range = document.createRange();
    for (let node = walker.nextNode() as Text | null; node !== null; node = walker.nextNode() as Text | null) {
      const text = node.data;
      if (text.trim().length < 2 || node.parentElement?.closest("td, th, dd, dt, h1, h2, h3, li") === null) continue;
      let previousTop: number | null = null;
      for (let index = 0; index < text.length; index += 1) {
        range.setStart(node, index);
        range.setEnd(node, index + 1);
        const rect = range.getClientRects()[0];
        if (rect === undefined || rect.width === 0) continue;
        if (
          previousTop !== null &&
          rect.top > previousTop + 2 &&
          word.test(text[index - 1] ?? "") &&
          word.test(text[index]!)
        ) {
          let start = index - 1;
          while (start > 0 && word.test(text[start - 1]!)) start -= 1;
          let end = index;
          while (end < text.length && word.test(text[end]!)) end += 1;
          if (end - start <= maxRun)
            found.push({ text, at: `${text.slice(Math.max(0, start - 12), index)}|${text.slice(index, end + 12)}` });
        }
        previousTop = rect.top;
      }
    }
    return found;
  }, longRun);
}

/** WCAG's contrast ratio of two CSS colours ("rgb(…)" as getComputedStyle gives them). */
export function contrastRatio(foreground: string, background: string): number {
  const luminance = (color: string) => {
    const [r, g, b] = (color.match(/[\d.]+/g) ?? ["0", "0", "0"]).slice(0, 3).map((part) => {
      const channel = Number(part) / 255;
      return channel <= 0.03928 ? channel / 12.92 : ((channel + 0.055) / 1.055) ** 2.4;
    }) as [number, number, number];
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const [light, dark] = [luminance(foreground), luminance(background)].sort((a, b) => b - a) as [number, number];
  return (light + 0.05) / (dark + 0.05);
}
