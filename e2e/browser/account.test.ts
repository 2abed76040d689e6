import { describe, expect, it } from "vitest";
import { signedInApiSession } from "./support/admin-api.js";
import { openConsolePage } from "./support/browser.js";
import { heading, signIn, submitSignIn, visible, waitForPath } from "./support/console-actions.js";
import { useSignedInConsole } from "./support/signed-in-console.js";

// Passwords: an engineer forgot theirs, the admin resets it in Users, the
// engineer signs in with it and changes it on their account page; each old
// password stops working. The tests run in order on one server.
// Its own admin: the spec runs on the shared system (e2e/browser/support/README.md).
const ADMIN = { email: "account-admin@example.com", password: "a long enough passphrase" };
const ENGINEER = {
  email: "eng@example.com",
  initial: "the initial password",
  reset: "reset by the admin",
  chosen: "my own passphrase now",
};

describe("console: account and passwords", () => {
  const system = useSignedInConsole({
    admin: ADMIN,
    shared: true,
    prepare: async (operon) => {
      const api = await signedInApiSession(operon, ADMIN);
      await api.client.users.create.mutate({ email: ENGINEER.email, role: "ENGINEER", password: ENGINEER.initial });
    },
  });

  it("an admin resets a user's password after confirming, and the user is signed out everywhere", async () => {
    // The engineer is signed in somewhere before the reset.
    const engineer = await openConsolePage(system.browser, system.operon.consoleUrl);
    await signIn(engineer.page, ENGINEER.email, ENGINEER.initial);

    const { page } = system.session;
    await page.goto("/users");
    await visible(heading(page, "Users"));
    expect(await page.getByRole("button", { name: `Reset password of ${ADMIN.email}` }).count()).toBe(0);
    await page.getByRole("button", { name: `Reset password of ${ENGINEER.email}` }).click();
    const dialog = await visible(page.getByRole("dialog", { name: `Reset the password of ${ENGINEER.email}?` }));
    // Too short: the API's message stays in the dialog and nothing changes.
    await dialog.getByLabel("New password").fill("short");
    await dialog.getByRole("button", { name: "Reset password" }).click();
    await visible(dialog.getByText(/at least 10 characters/));
    await dialog.getByLabel("New password").fill(ENGINEER.reset);
    await dialog.getByRole("button", { name: "Reset password" }).click();
    await dialog.waitFor({ state: "hidden" });

    // The engineer's open session ends: the next page asks to sign in.
    await engineer.page.goto("/models");
    await waitForPath(engineer.page, "/sign-in?next=%2Fmodels");
    await submitSignIn(engineer.page, ENGINEER.email, ENGINEER.initial);
    await visible(engineer.page.getByRole("main").getByRole("alert"));
    expect(await engineer.page.getByRole("main").getByRole("alert").textContent()).toMatch(/wrong email or password/);
    await engineer.context.close();
    expect(system.session.errors).toEqual([]);
  }, 90_000);

  it("the user signs in with the reset password and changes it on their account page", async () => {
    const engineer = await openConsolePage(system.browser, system.operon.consoleUrl);
    const { page } = engineer;
    await signIn(page, ENGINEER.email, ENGINEER.reset);
    await page
      .getByRole("banner")
      .getByRole("link", { name: /eng@example\.com/ })
      .click();
    await waitForPath(page, "/account");
    await visible(heading(page, "Your account"));
    expect(await page.getByRole("region", { name: "Profile" }).textContent()).toContain("Engineer");
    const form = page.getByRole("form", { name: "Change password" });

    // The confirmation must match; the browser says so before asking the API.
    await form.getByLabel("Current password").fill(ENGINEER.reset);
    await form.getByLabel("New password", { exact: true }).fill(ENGINEER.chosen);
    await form.getByLabel("New password, again").fill("something else entirely");
    await form.getByRole("button", { name: "Change password" }).click();
    await visible(form.getByText("does not match the new password"));
    // A wrong current password is named at its field.
    await form.getByLabel("Current password").fill("not my password at all");
    await form.getByLabel("New password, again").fill(ENGINEER.chosen);
    await form.getByRole("button", { name: "Change password" }).click();
    await visible(form.getByText("wrong password"));

    await form.getByLabel("Current password").fill(ENGINEER.reset);
    await form.getByRole("button", { name: "Change password" }).click();
    await visible(form.getByRole("status").filter({ hasText: "Password changed." }));
    // This session stays signed in.
    await page.goto("/models");
    await visible(heading(page, "Models"));

    await page.getByRole("button", { name: "Sign out" }).click();
    await waitForPath(page, "/sign-in");
    await submitSignIn(page, ENGINEER.email, ENGINEER.reset);
    await visible(page.getByRole("main").getByRole("alert"));
    await submitSignIn(page, ENGINEER.email, ENGINEER.chosen);
    await waitForPath(page, "/");
    expect(engineer.errors).toEqual([]);
    await engineer.context.close();
  }, 90_000);
});
