import type { Locator, Page } from "playwright-core";

/** What a person does in the console, in the words the page uses (labels, roles, headings). */

export async function visible(locator: Locator, timeoutMs = 20_000): Promise<Locator> {
  await locator.first().waitFor({ state: "visible", timeout: timeoutMs });
  return locator;
}

export function heading(page: Page, name: string): Locator {
  return page.getByRole("heading", { name, exact: true });
}

/** The page's own alert (Next.js also keeps a route announcer with role alert, outside <main>). */
export function formAlert(page: Page): Locator {
  return page.getByRole("main").getByRole("alert");
}

/** Waits until the browser is at `path` (pathname and query, e.g. "/sign-in?next=%2Fapi-keys"). */
export async function waitForPath(page: Page, path: string, timeoutMs = 30_000): Promise<void> {
  await page.waitForURL((url) => url.pathname + url.search === path, { timeout: timeoutMs });
}

/** Fills the sign-in form, submits it and waits for the API's answer. */
export async function submitSignIn(page: Page, email: string, password: string): Promise<void> {
  await visible(heading(page, "Sign in"));
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(password);
  await Promise.all([
    page.waitForResponse((response) => response.url().includes("auth.signIn")),
    page.getByRole("button", { name: "Sign in" }).click(),
  ]);
}

/** Signs in from the sign-in page and waits for the console's header. */
export async function signIn(page: Page, email: string, password: string): Promise<void> {
  await page.goto("/sign-in");
  await submitSignIn(page, email, password);
  await waitForPath(page, "/");
  await visible(page.getByRole("banner").getByRole("button", { name: "Sign out" }));
}
