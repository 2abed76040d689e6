import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Locator } from "playwright-core";
import { afterAll, describe, expect, it } from "vitest";
import { EXAMPLE_REPOSITORY, startOperon, type RunningOperon } from "../support/operon-process.js";
import { accessibilityViolations } from "./support/accessibility.js";
import { pollUntil } from "./support/chart-reading.js";
import { heading, visible } from "./support/console-actions.js";
import { saveScreenshot } from "./support/screenshots.js";
import { useSignedInConsole } from "./support/signed-in-console.js";

// Issue 23, as an operator sees it: one control plane (`operon serve --role control-plane`, with the
// console) and two gateways (`--role gateway`) on one PostgreSQL, the way the Kubernetes base runs
// them. The workers page lists both gateways with the state each answers on its readiness endpoint;
// a gateway that dies (its pod evicted) leaves the list within a refresh while the other stays.
// Its own system: the spec adds processes to it and kills one.
const ADMIN = { email: "cluster-gateways-admin@example.com", password: "a long enough passphrase" };
const SPEC_FILE = fileURLToPath(import.meta.url);

/** The card's gateway rows as their cells' text, one array per row (the header row left out). */
async function gatewayRows(table: Locator): Promise<string[][]> {
  const rows = await table.getByRole("row").all();
  const cells = await Promise.all(rows.map((row) => row.getByRole("cell").allTextContents()));
  return cells.filter((row) => row.length > 0);
}

const portOf = (gateway: RunningOperon): string => new URL(gateway.httpUrl).port;

describe("console: the cluster's gateways on the workers page", () => {
  // The model store the gateways serve (a shared volume on Kubernetes), with add_sub in it: small, quick to load.
  const store = mkdtempSync(join(tmpdir(), "operon-cluster-store-"));
  cpSync(join(EXAMPLE_REPOSITORY, "add_sub"), join(store, "add_sub"), { recursive: true });
  let gateways: RunningOperon[] = [];

  const system = useSignedInConsole({
    admin: ADMIN,
    extraArgs: ["--role", "control-plane", "--model-store", store],
    prepare: async (operon) => {
      const args = [
        "--role",
        "gateway",
        "--database-url",
        operon.databaseUrl,
        "--model-repository",
        store,
        "--model-control-mode",
        "explicit",
        "--load-model",
        "*",
      ];
      gateways = await Promise.all([
        startOperon(args, { timeoutMs: 120_000 }),
        startOperon(args, { timeoutMs: 120_000 }),
      ]);
    },
  });

  afterAll(async () => {
    await Promise.all(gateways.map((gateway) => gateway.stop()));
    rmSync(store, { recursive: true, force: true });
  });

  it("lists both gateways, each ready, with the port it serves on", async () => {
    const { page } = system.session;
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Workers" }).click();
    await visible(heading(page, "Workers"));
    const card = await visible(page.getByRole("region", { name: "Cluster gateways" }), 30_000);
    await visible(card.getByText("2 gateways on this database (operon serve --role gateway)"));
    const table = card.getByRole("table", { name: "Cluster gateways" });
    // The page asks every 5 s; a gateway that just started may still be loading add_sub (not ready).
    const rows = await pollUntil(
      () => gatewayRows(table),
      (read) => read.length === 2 && read.every((cells) => cells.some((cell) => cell === "Ready")),
      30_000,
    );
    const ports = gateways.map(portOf).sort();
    expect(rows.map((cells) => cells.find((cell) => ports.includes(cell))).sort()).toEqual(ports);
    for (const cells of rows) {
      expect(cells).toContain("Ready");
      expect(cells).toContain("127.0.0.1"); // the address the database sees the gateway connect from
    }
    await card.scrollIntoViewIfNeeded();
    await saveScreenshot(page, SPEC_FILE, "two gateways ready");
    for (const scheme of ["light", "dark"] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      expect(await accessibilityViolations(page), scheme).toEqual([]);
    }
    await page.emulateMedia({ colorScheme: "light" });
    expect(system.session.errors).toEqual([]);
  }, 90_000);

  it("shows a killed gateway gone within a refresh, the other still ready", async () => {
    const { page } = system.session;
    const [killed, kept] = gateways as [RunningOperon, RunningOperon];
    killed.process.kill("SIGKILL");
    await killed.exited;
    const card = page.getByRole("region", { name: "Cluster gateways" });
    const table = card.getByRole("table", { name: "Cluster gateways" });
    // Its database connection closed with the process: gone at the next refresh (every 5 s).
    const rows = await pollUntil(
      () => gatewayRows(table),
      (read) => read.length === 1,
      15_000,
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]).toContain(portOf(kept));
    expect(rows[0]).toContain("Ready");
    expect(rows.flat()).not.toContain(portOf(killed));
    await visible(card.getByText("1 gateway on this database (operon serve --role gateway)"));
    await saveScreenshot(page, SPEC_FILE, "one gateway killed");
    expect(await accessibilityViolations(page)).toEqual([]);
    expect(system.session.errors).toEqual([]);
  }, 60_000);
});
