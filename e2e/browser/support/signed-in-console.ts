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
import { createSpecAdmin, sharedOperonWithConsole } from "./shared-system.js";

/**
 * The set-up most browser specs share: a running system (by default the
 * spec's own, started before the first test and stopped after the last;
 * with `shared: true` the one system every shared spec with the same flags
 * uses, see README.md here), Chromium with a console page signed in as
 * `admin`, and a screenshot after every test.
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
    /**
     * Run on the shared system with these flags (extraArgs, env) instead of starting one: saves the
     * system's start-up. `admin` is then created on it for this spec, so its email must be the spec's own
     * (no other spec may use it), and the spec must not depend on what other specs leave behind.
     */
    shared?: boolean;
  },
): SignedInConsole {
  let operon: RunningOperonWithConsole | undefined;
  let browser: Browser | undefined;
  let session: ConsolePage | undefined;

  beforeAll(async () => {
    if (options.shared === true) {
      operon = await sharedOperonWithConsole({
        ...(options.extraArgs ? { extraArgs: options.extraArgs } : {}),
        ...(options.env ? { env: options.env } : {}),
      });
      await createSpecAdmin(operon, options.admin);
    } else {
      operon = await startOperonWithConsole(options);
    }
    await options.prepare?.(operon);
    browser = await launchBrowser();
    session = await openConsolePage(browser, operon.consoleUrl);
    await signIn(session.page, options.admin.email, options.admin.password);
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    // A shared system keeps running for the next spec (the broker stops it after the last).
    if (options.shared !== true) await operon?.stop();
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
