import { createRequire } from "node:module";
import type { Page } from "playwright-core";
import type { AxeResults, Result } from "axe-core";

/**
 * WCAG 2.1 A/AA checks with axe-core (Deque's engine, the one browser
 * devtools and Lighthouse use), run inside the page as it is.
 */
const AXE_SOURCE_PATH = createRequire(import.meta.url).resolve("axe-core/axe.min.js");

export const WCAG_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"] as const;

export interface AccessibilityViolation {
  rule: string;
  impact: string | null;
  help: string;
  /** CSS selectors of the first offending elements, with axe's summary of what is wrong there. */
  where: string[];
}

export async function accessibilityViolations(page: Page): Promise<AccessibilityViolation[]> {
  const loaded = await page.evaluate(() => typeof (window as unknown as { axe?: unknown }).axe === "object");
  if (!loaded) await page.addScriptTag({ path: AXE_SOURCE_PATH });
  const results = await page.evaluate(
    (tags) =>
      (window as unknown as { axe: { run(context: Document, options: object): Promise<AxeResults> } }).axe.run(
        document,
        { runOnly: { type: "tag", values: tags } },
      ),
    [...WCAG_TAGS],
  );
  return results.violations.map((violation: Result) => ({
    rule: violation.id,
    impact: violation.impact ?? null,
    help: violation.help,
    where: violation.nodes
      .slice(0, 5)
      .map((node) => `${node.target.join(" ")}: ${node.failureSummary?.replace(/\s+/g, " ") ?? ""}`),
  }));
}
