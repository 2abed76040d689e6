import { existsSync } from "node:fs";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";

/**
 * Chromium for the console's browser tests: Debian's package, driven by
 * playwright-core (e2e/scripts/ensure-test-deps.mjs installs it). Never
 * `npx playwright install`: it downloads a browser from a host CI cannot reach.
 */
export const CHROMIUM_PATH = process.env.OPERON_CHROMIUM ?? "/usr/bin/chromium";

export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
];

export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(
      `no Chromium at ${CHROMIUM_PATH}: run \`node e2e/scripts/ensure-test-deps.mjs\` (installs Debian's chromium) or set OPERON_CHROMIUM`,
    );
  }
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, headless: true });
}

export interface ConsolePage {
  context: BrowserContext;
  page: Page;
  /** Uncaught exceptions and console errors the page reported, for tests to assert there were none. */
  errors: string[];
}

/** A fresh browser context (no cookies) with one page on the console. */
export async function openConsolePage(
  browser: Browser,
  baseURL: string,
  viewport = { width: 1280, height: 800 },
): Promise<ConsolePage> {
  const context = await browser.newContext({ baseURL, viewport });
  const page = await context.newPage();
  page.setDefaultTimeout(20_000);
  page.setDefaultNavigationTimeout(30_000);
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(`uncaught: ${error.message}`));
  page.on("console", (message) => {
    // Failed API calls the page shows to the person (401 at sign-in) are logged by the browser as resource errors; they are expected.
    if (message.type() === "error" && !message.text().startsWith("Failed to load resource"))
      errors.push(`console: ${message.text()}`);
  });
  return { context, page, errors };
}
