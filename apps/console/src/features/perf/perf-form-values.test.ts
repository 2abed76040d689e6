import { describe, expect, it } from "vitest";
import { parsePerfForm } from "./perf-form-values";

function form(values: Record<string, string>): FormData {
  const data = new FormData();
  for (const [key, value] of Object.entries(values)) data.set(key, value);
  return data;
}

const VALID = {
  target: "MODEL:add_sub",
  concurrencyStart: "1",
  concurrencyEnd: "2",
  concurrencyStep: "1",
  batchSize: "1",
  measurementIntervalSecs: "0.5",
};

describe("parsePerfForm", () => {
  it("reads the target and sends the interval in milliseconds", () => {
    expect(parsePerfForm(form(VALID))).toEqual({
      ok: true,
      input: {
        target: { kind: "MODEL", name: "add_sub" },
        concurrency: { start: 1, end: 2, step: 1 },
        batchSize: 1,
        measurementIntervalMs: 500,
      },
    });
    expect(parsePerfForm(form({ ...VALID, target: "OPERATOR:a:b" }))).toMatchObject({
      ok: true,
      input: { target: { kind: "OPERATOR", name: "a:b" } },
    });
  });

  it("names the fields it cannot read, with the API's paths", () => {
    const parsed = parsePerfForm(
      form({
        ...VALID,
        target: "",
        concurrencyStart: "3",
        concurrencyEnd: "2",
        batchSize: "0",
        measurementIntervalSecs: "x",
      }),
    );
    expect(parsed.ok ? [] : parsed.fieldErrors.map((field) => field.path)).toEqual([
      "target.name",
      "batchSize",
      "measurementIntervalMs",
      "concurrency.end",
    ]);
  });
});
