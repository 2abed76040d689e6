import { describe, expect, it } from "vitest";
import { formDefaults, parseProfileForm } from "./profile-form-values";

function form(values: Record<string, string>): FormData {
  const data = new FormData();
  for (const [key, value] of Object.entries(values)) data.set(key, value);
  return data;
}

describe("the hardware profile form", () => {
  it("reads GiB as bytes, empty optional fields as null and the GPU count as 0", () => {
    const parsed = parseProfileForm(
      form({
        name: " host ",
        kind: "CPU",
        cpuCores: "16",
        memoryGiB: "0.5",
        gpuModel: "",
        gpuCount: "",
        gpuMemoryGiB: "",
        costPerHour: "1.25",
        currency: "eur",
      }),
    );
    expect(parsed).toEqual({
      ok: true,
      input: {
        name: "host",
        kind: "CPU",
        cpuCores: 16,
        memoryBytes: 512 * 1024 ** 2,
        gpuModel: null,
        gpuCount: 0,
        gpuMemoryBytes: null,
        gpuPriceShare: null,
        costPerHour: 1.25,
        currency: "eur",
      },
    });
  });

  it("names the fields it cannot read, with the API's paths", () => {
    const parsed = parseProfileForm(
      form({ name: "x", kind: "GPU", cpuCores: "1.5", memoryGiB: "-1", gpuCount: "1", costPerHour: "" }),
    );
    expect(parsed.ok).toBe(false);
    expect(parsed.ok ? [] : parsed.fieldErrors.map((error) => error.path)).toEqual([
      "costPerHour",
      "cpuCores",
      "memoryBytes",
    ]);
  });

  it("names an empty name with the fields it cannot read, all on one submit", () => {
    const parsed = parseProfileForm(
      form({ name: "", kind: "GPU", cpuCores: "0", gpuPricePercent: "120", costPerHour: "-2" }),
    );
    expect(parsed.ok ? [] : parsed.fieldErrors).toEqual([
      { path: "costPerHour", message: "a number, 0 or more" },
      { path: "name", message: "required" },
      { path: "cpuCores", message: "at least 1 (leave it empty when not known)" },
      { path: "gpuPriceShare", message: "at most 100 %" },
    ]);
  });

  it("reads the GPU share of the price in percent", () => {
    const parsed = parseProfileForm(
      form({ name: "g", kind: "GPU", gpuCount: "1", gpuPricePercent: "62.5", costPerHour: "3", currency: "USD" }),
    );
    expect(parsed.ok && parsed.input.gpuPriceShare).toBe(0.625);
  });

  it("prefills an edit from the stored profile", () => {
    const defaults = formDefaults({
      id: "1",
      name: "gpu box",
      kind: "GPU",
      cpuCores: null,
      memoryBytes: 64 * 1024 ** 3,
      gpuModel: "H100",
      gpuCount: 8,
      gpuMemoryBytes: 80 * 1024 ** 3,
      gpuPriceShare: 0.7,
      costPerHour: 98.32,
      currency: "USD",
      isDefault: true,
      createdAt: "2026-01-01T00:00:00.000Z",
      updatedAt: "2026-01-01T00:00:00.000Z",
    });
    expect(defaults).toMatchObject({
      cpuCores: "",
      memoryGiB: "64",
      gpuCount: "8",
      gpuMemoryGiB: "80",
      gpuPricePercent: "70",
      costPerHour: "98.32",
    });
  });
});
