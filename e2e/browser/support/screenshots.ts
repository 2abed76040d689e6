import { mkdirSync } from "node:fs";
import { basename, join } from "node:path";
import type { Page } from "playwright-core";
import { afterEach } from "vitest";
import { REPO_ROOT } from "../../support/operon-process.js";

/** Where browser tests leave their screenshots (git-ignored; CI keeps the folder as an artifact). */
export const SCREENSHOT_DIR = join(REPO_ROOT, "e2e/artifacts/screenshots");

function slug(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .slice(0, 80)
    .replace(/^-+|-+$/g, "");
}

export function screenshotPath(specFile: string, testName: string): string {
  return join(SCREENSHOT_DIR, `${slug(basename(specFile).replace(/\.test\.ts$/, ""))}-${slug(testName)}.png`);
}

/** Saves the page as e2e/artifacts/screenshots/<spec>-<test>.png. */
export async function saveScreenshot(page: Page, specFile: string, testName: string): Promise<string> {
  const path = screenshotPath(specFile, testName);
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  await page.screenshot({ path, fullPage: true });
  return path;
}

/**
 * After every test of the file, passed or failed, saves what the page shows
 * then: one PNG per test, the last state it reached.
 */
export function screenshotAfterEachTest(currentPage: () => Page | undefined): void {
  afterEach(async ({ task }) => {
    const page = currentPage();
    if (!page || page.isClosed()) return;
    await saveScreenshot(page, task.file.filepath ?? task.file.name, task.name).catch((error: unknown) => {
      console.error(`could not save the screenshot of "${task.name}": ${String(error)}`);
    });
  });
}
