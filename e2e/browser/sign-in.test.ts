import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchBrowser, openConsolePage, type ConsolePage } from "./support/browser.js";
import { formAlert, heading, submitSignIn, visible, waitForPath } from "./support/console-actions.js";
import { startOperonWithConsole, type RunningOperonWithConsole } from "./support/operon-with-console.js";
import { screenshotAfterEachTest } from "./support/screenshots.js";

// One person's first day: set up Operon from the link `operon serve` printed,
// sign out, mistype the password, sign in. The tests run in order on one server.
const ADMIN = { email: "ada@example.com", name: "Ada Admin", password: "a long enough passphrase" };

describe("console: first-run setup, sign-out and sign-in", () => {
  let operon: RunningOperonWithConsole | undefined;
  let browser: Browser | undefined;
  let session: ConsolePage;
  /** The page the test's screenshot shows. */
  let shown: Page | undefined;

  beforeAll(async () => {
    operon = await startOperonWithConsole();
    browser = await launchBrowser();
    session = await openConsolePage(browser, operon.consoleUrl);
    shown = session.page;
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await operon?.stop();
  });

  screenshotAfterEachTest(() => shown);

  it("sends a fresh install to setup, and the printed link creates the admin and signs them in", async () => {
    const { page } = session;
    await page.goto("/");
    await waitForPath(page, "/setup");
    await visible(heading(page, "Set up Operon"));

    await page.goto(operon!.setupUrl!);
    await visible(heading(page, "Set up Operon"));
    expect(await page.getByLabel("Setup token").inputValue()).toBe(
      new URL(operon!.setupUrl!).searchParams.get("token"),
    );
    await page.getByLabel("Email").fill(ADMIN.email);
    await page.getByLabel("Name (optional)").fill(ADMIN.name);
    await page.getByLabel("Password", { exact: true }).fill(ADMIN.password);
    await page.getByLabel("Password again").fill(`${ADMIN.password}!`);
    await page.getByRole("button", { name: "Create admin and sign in" }).click();
    await visible(page.getByText("the two passwords differ"));

    await page.getByLabel("Password again").fill(ADMIN.password);
    await page.getByRole("button", { name: "Create admin and sign in" }).click();
    await waitForPath(page, "/");
    const header = await visible(page.getByRole("banner"));
    await visible(header.getByRole("button", { name: "Sign out" }));
    expect(await header.textContent()).toContain(ADMIN.name);
    expect(await header.textContent()).toContain("Admin");
    expect(await page.getByRole("navigation", { name: "Main" }).getByRole("link").allTextContents()).toEqual(
      expect.arrayContaining(["Overview", "API keys", "Users", "Audit"]),
    );
    expect(session.errors).toEqual([]);
  });

  it("counts the setup as the admin's first sign-in on the Users page", async () => {
    const { page } = session;
    await page.goto("/users");
    await visible(heading(page, "Users"));
    const row = page.getByRole("row").filter({ has: page.getByRole("rowheader", { name: new RegExp(ADMIN.email) }) });
    const lastSignIn = (await (await visible(row.locator('td[data-label="Last sign-in"]'))).textContent()) ?? "";
    expect(lastSignIn).not.toBe("never");
    expect(lastSignIn).toMatch(/\d/);
    expect(session.errors).toEqual([]);
  });

  it("signs out, and then the console's pages ask to sign in", async () => {
    const { page } = session;
    await page.getByRole("button", { name: "Sign out" }).click();
    await waitForPath(page, "/sign-in");
    await visible(heading(page, "Sign in"));
    expect(await page.getByRole("link", { name: "Set up the first admin" }).count()).toBe(0);

    await page.goto("/users");
    await waitForPath(page, "/sign-in?next=%2Fusers");
    await visible(heading(page, "Sign in"));
    expect(session.errors).toEqual([]);
  });

  it("shows the API's message for a wrong password and stays on sign-in", async () => {
    const { page } = session;
    await submitSignIn(page, ADMIN.email, "not the password");
    const alert = await visible(formAlert(page));
    expect(await alert.textContent()).toContain("wrong email or password");
    await waitForPath(page, "/sign-in?next=%2Fusers");
    expect(session.errors).toEqual([]);
  });

  it("signs in and returns to the page that asked", async () => {
    const { page } = session;
    await page.getByLabel("Password").fill(ADMIN.password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await waitForPath(page, "/users");
    await visible(heading(page, "Users"));
    await visible(page.getByRole("rowheader", { name: new RegExp(ADMIN.email) }));
    expect(session.errors).toEqual([]);
  });

  it("after repeated failures tells how long to wait", async () => {
    // Another browser, guessing at an account that does not exist.
    const stranger = await openConsolePage(browser!, operon!.consoleUrl);
    shown = stranger.page;
    await stranger.page.goto("/sign-in");
    let message = "";
    for (let attempt = 0; attempt < 8 && !/try again/.test(message); attempt += 1) {
      await submitSignIn(stranger.page, "nobody@example.com", `guess number ${attempt}`);
      message = (await (await visible(formAlert(stranger.page))).textContent()) ?? "";
    }
    expect(message).toMatch(/too many failed sign-ins; try again in \d+ s/);
    expect(stranger.errors).toEqual([]);
  });

  it("counts guesses by where they really come from, not by an X-Forwarded-For the client sends", async () => {
    // A client naming a new address on every guess must still run into the limit.
    const spoofer = await openConsolePage(browser!, operon!.consoleUrl);
    shown = spoofer.page;
    await spoofer.page.goto("/sign-in");
    let message = "";
    let attempts = 0;
    for (; attempts < 8 && !/try again/.test(message); attempts += 1) {
      await spoofer.page.setExtraHTTPHeaders({
        "x-forwarded-for": `203.0.113.${attempts + 1}`,
        forwarded: `for=198.51.100.${attempts + 1}`,
        "x-real-ip": `192.0.2.${attempts + 1}`,
      });
      await submitSignIn(spoofer.page, "someone@example.com", `guess number ${attempts}`);
      message = (await (await visible(formAlert(spoofer.page))).textContent()) ?? "";
    }
    expect(message).toMatch(/too many failed sign-ins; try again in \d+ s/);
    // Five wrong guesses are allowed per account and address; the sixth is refused.
    expect(attempts).toBe(6);
    expect(spoofer.errors).toEqual([]);
  });
});
