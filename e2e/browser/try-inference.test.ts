import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { formAlert, heading, visible } from "./support/console-actions.js";
import { useSignedInConsole } from "./support/signed-in-console.js";

// A viewer's (here: the admin's) task: try a model from its page without
// writing a client. add_sub answers INPUT0 + INPUT1 and INPUT0 - INPUT1.
const ADMIN = { email: "admin@example.com", password: "a long enough passphrase" };
// Halves and small whole numbers: exact in FP32, so the sums compare exactly.
const INPUT0 = Array.from({ length: 16 }, (_, index) => index + 0.5);
const INPUT1 = Array.from({ length: 16 }, (_, index) => 2 * index - 7);

describe("console: try a model from its page", () => {
  const system = useSignedInConsole({ admin: ADMIN });

  it("runs add_sub with the values typed and shows their sum and difference", async () => {
    const { page } = system.session;
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Models" }).click();
    await page.getByRole("link", { name: "add_sub", exact: true }).click();
    await visible(heading(page, "add_sub"));
    const panel = await visible(page.getByRole("form", { name: "Try add_sub" }));

    const first = panel.getByRole("group", { name: "Input “INPUT0”" });
    const second = panel.getByRole("group", { name: "Input “INPUT1”" });
    // Prefilled from the model's metadata: [-1, 16] as one request of 16 values.
    expect(await first.getByLabel("Datatype").inputValue()).toBe("FP32");
    expect(await first.getByLabel("Shape").inputValue()).toBe("1, 16");
    expect(JSON.parse(await first.getByLabel("Data (JSON array, row-major)").inputValue())).toHaveLength(16);

    await first.getByLabel("Data (JSON array, row-major)").fill(JSON.stringify(INPUT0));
    await second.getByLabel("Data (JSON array, row-major)").fill(JSON.stringify(INPUT1));
    await panel.getByRole("button", { name: "Run" }).click();

    const outputs = await visible(panel.getByRole("table", { name: "Outputs" }));
    const dataOf = async (name: string): Promise<number[]> =>
      JSON.parse(
        (await outputs
          .getByRole("row", { name: new RegExp(`^${name} `) })
          .locator("code")
          .textContent()) ?? "",
      ) as number[];
    expect(await dataOf("OUTPUT0")).toEqual(INPUT0.map((value, index) => value + INPUT1[index]!));
    expect(await dataOf("OUTPUT1")).toEqual(INPUT0.map((value, index) => value - INPUT1[index]!));
    expect(await outputs.getByRole("row", { name: /^OUTPUT0 / }).textContent()).toContain("FP32[1, 16]");
    // A classifier's answer at a glance (issue 27, item 6): OUTPUT0 = 3i - 6.5 peaks at its last index.
    const sum = outputs.getByRole("row", { name: /^OUTPUT0 / });
    expect(await sum.getByRole("cell").nth(2).textContent()).toBe(
      "argmax 15top 5: 15 (38.5), 14 (35.5), 13 (32.5), 12 (29.5), 11 (26.5)",
    );
    // And the whole tensor as a download.
    const [download] = await Promise.all([
      page.waitForEvent("download"),
      sum.getByRole("button", { name: "Download JSON of OUTPUT0" }).click(),
    ]);
    expect(download.suggestedFilename()).toBe("OUTPUT0.json");
    const saved = JSON.parse(readFileSync((await download.path())!, "utf8")) as { shape: number[]; data: number[] };
    expect(saved).toMatchObject({ name: "OUTPUT0", datatype: "FP32", shape: [1, 16] });
    expect(saved.data).toEqual(INPUT0.map((value, index) => value + INPUT1[index]!));
    expect(await panel.getByText(/answered in \d+\.\d\d ms/).count()).toBe(1);
    expect(system.session.errors).toEqual([]);
  }, 60_000);

  it("checks the values against the shape, and shows the gateway's refusal plainly", async () => {
    const { page } = system.session;
    const panel = page.getByRole("form", { name: "Try add_sub" });
    const first = panel.getByRole("group", { name: "Input “INPUT0”" });
    const second = panel.getByRole("group", { name: "Input “INPUT1”" });

    // Too few values for the shape: said at the field, nothing sent.
    await first.getByLabel("Data (JSON array, row-major)").fill("[1, 2, 3]");
    await panel.getByRole("button", { name: "Run" }).click();
    await visible(first.getByText("the shape holds 16 values; 3 given"));
    // The last run's outputs answered other values: they go, not stay under the new error.
    expect(await panel.getByRole("table", { name: "Outputs" }).count()).toBe(0);
    expect(await panel.getByText(/answered in/).count()).toBe(0);

    // A shape the model does not take: the gateway refuses, and the page says why.
    await first.getByLabel("Shape").fill("1, 3");
    await second.getByLabel("Shape").fill("1, 3");
    await second.getByLabel("Data (JSON array, row-major)").fill("[1, 1, 1]");
    await panel.getByRole("button", { name: "Run" }).click();
    const alert = await visible(formAlert(page));
    expect(await alert.textContent()).toMatch(/^The request failed: .*INPUT0/);
    expect(system.session.errors).toEqual([]);
  }, 60_000);
});
