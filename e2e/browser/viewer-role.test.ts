import { describe, expect, it } from "vitest";
import { signedInApiSession } from "./support/admin-api.js";
import { openConsolePage, type ConsolePage } from "./support/browser.js";
import { heading, signIn, visible } from "./support/console-actions.js";
import { useSignedInConsole } from "./support/signed-in-console.js";

// A viewer's console on a server that has had no traffic: everything is
// readable, nothing offers a change the viewer's role cannot make, pages for
// other roles say which role they need, and the overview explains its empty
// charts. The tests run in order on one server.
const ADMIN = { email: "admin@example.com", password: "a long enough passphrase" };
const VIEWER = { email: "viewer@example.com", password: "only looking around" };

describe("console: a viewer, on a server without traffic", () => {
  const system = useSignedInConsole({
    admin: ADMIN,
    prepare: async (operon) => {
      const api = await signedInApiSession(operon, ADMIN);
      await api.client.users.create.mutate({ email: VIEWER.email, role: "VIEWER", password: VIEWER.password });
    },
  });
  let viewer: ConsolePage;

  it("sees the read-only sections in the menu and an overview that says there is no traffic yet", async () => {
    viewer = await openConsolePage(system.browser, system.operon.consoleUrl);
    const { page } = viewer;
    await signIn(page, VIEWER.email, VIEWER.password);
    const nav = page.getByRole("navigation", { name: "Main" });
    expect(await nav.getByRole("link").allTextContents()).toEqual([
      "Overview",
      "Models",
      "Operators",
      "Perf reports",
      "Workers",
      "Scheduler",
      "Hardware & cost",
    ]);
    expect(await page.getByRole("banner").textContent()).toContain("Viewer");

    await visible(heading(page, "Overview"));
    // No inference has been served: the live table shows zero requests, and the charts say why they are empty.
    await visible(page.getByText("No usage samples in this range yet", { exact: true }), 30_000);
    await visible(page.getByText("No usage to cost in this range", { exact: true }));
    expect(viewer.errors).toEqual([]);
  }, 90_000);

  it("reads models, operators, perf reports and hardware without any button that changes them", async () => {
    // What the admin sees on the same pages, so the absences below are real.
    const admin = system.session.page;
    await admin.goto("/models/add_sub");
    await visible(admin.getByRole("button", { name: "Unload add_sub" }));
    await admin.goto("/hardware");
    await visible(admin.getByRole("button", { name: "Add profile" }));
    await admin.goto("/perf");
    await visible(admin.getByRole("button", { name: "Start run" }));

    const { page } = viewer;
    await page.goto("/models");
    await visible(page.getByRole("row", { name: /add_sub/ }));
    expect(await page.getByRole("link", { name: "Upload model" }).count()).toBe(0);
    await page.goto("/models/add_sub");
    await visible(heading(page, "add_sub"));
    expect(await page.getByRole("button", { name: /^(Unload|Load|Delete|Edit config)/ }).count()).toBe(0);

    await page.goto("/operators");
    await visible(heading(page, "Operators"));
    expect(await page.getByRole("link", { name: /New operator/ }).count()).toBe(0);

    await page.goto("/perf");
    await visible(heading(page, "Perf reports"));
    expect(await page.getByRole("button", { name: "Start run" }).count()).toBe(0);

    await page.goto("/hardware");
    await visible(heading(page, "Hardware & cost"));
    expect(await page.getByRole("button", { name: "Add profile" }).count()).toBe(0);
    expect(viewer.errors).toEqual([]);
  }, 90_000);

  it("is told which role a page needs when it opens one directly, and the API refuses the change too", async () => {
    const { page } = viewer;
    for (const [path, role] of [
      ["/users", "admin"],
      ["/audit", "admin"],
      ["/models/upload", "engineer"],
      ["/operators/new", "engineer"],
      ["/api-keys", "engineer"],
    ] as const) {
      await page.goto(path);
      await visible(page.getByText(`This page needs the ${role} role`, { exact: true }));
    }
    // The page only reflects the API's rule: a viewer's call is refused there as well.
    const api = await signedInApiSession(system.operon, VIEWER);
    await expect(api.client.apiKeys.create.mutate({ name: "sneaky", scopes: ["infer"] })).rejects.toThrow(
      /role|permission|forbidden/i,
    );
    expect(viewer.errors).toEqual([]);
    await viewer.context.close();
  }, 90_000);
});
