import type { Browser } from "playwright-core";
import { afterAll, beforeAll } from "vitest";
import { launchBrowser, openConsolePage, type ConsolePage } from "./browser.js";
import { signIn } from "./console-actions.js";
import {
  startOperonWithConsole,
  type OperonWithConsoleOptions,
  type RunningOperonWithConsole,
} from "./operon-with-console.js";
import { screenshotAfterEachTest } from "./screenshots.js";

/**
 * The set-up most browser specs share: one running system per spec file
 * (started before the first test, stopped after the last), Chromium with a
 * console page signed in as `admin`, and a screenshot after every test.
 * Call it at the top of a describe block; read the fields inside tests.
 */
export interface SignedInConsole {
  readonly operon: RunningOperonWithConsole;
  readonly browser: Browser;
  readonly session: ConsolePage;
}

export function useSignedInConsole(
  options: OperonWithConsoleOptions & {
    admin: { email: string; password: string };
    /** Runs once the system is up, before the browser opens (e.g. seed data through the API). */
    prepare?: (operon: RunningOperonWithConsole) => Promise<void>;
  },
): SignedInConsole {
  let operon: RunningOperonWithConsole | undefined;
  let browser: Browser | undefined;
  let session: ConsolePage | undefined;

  beforeAll(async () => {
    operon = await startOperonWithConsole(options);
    await options.prepare?.(operon);
    browser = await launchBrowser();
    session = await openConsolePage(browser, operon.consoleUrl);
    await signIn(session.page, options.admin.email, options.admin.password);
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await operon?.stop();
  });

  screenshotAfterEachTest(() => session?.page);

  const started = <T>(value: T | undefined, what: string): T => {
    if (value === undefined) throw new Error(`the ${what} is not started (did beforeAll fail?)`);
    return value;
  };
  return {
    get operon() {
      return started(operon, "system");
    },
    get browser() {
      return started(browser, "browser");
    },
    get session() {
      return started(session, "console page");
    },
  };
}
