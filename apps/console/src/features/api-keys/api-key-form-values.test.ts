import { describe, expect, it } from "vitest";
import { parseApiKeyForm } from "./api-key-form-values";

function form(fields: Record<string, string | string[]>): FormData {
  const data = new FormData();
  for (const [name, value] of Object.entries(fields)) for (const item of [value].flat()) data.append(name, item);
  return data;
}

describe("parseApiKeyForm", () => {
  it("leaves empty optional fields to the API's defaults", () => {
    expect(
      parseApiKeyForm(form({ name: " ci ", scopes: ["infer"], expiresOn: "", priorityLevel: "", qpsQuota: "" })),
    ).toEqual({
      ok: true,
      input: { name: "ci", scopes: ["infer"] },
    });
  });

  it("sends numbers, and the expiry as the end of that day in local time", () => {
    const parsed = parseApiKeyForm(
      form({ name: "ops", scopes: ["infer", "admin"], expiresOn: "2031-03-04", priorityLevel: "2", qpsQuota: "50" }),
    );
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    expect(parsed.input).toMatchObject({ name: "ops", scopes: ["infer", "admin"], priorityLevel: 2, qpsQuota: 50 });
    const expiry = new Date(parsed.input.expiresAt as string);
    expect([expiry.getFullYear(), expiry.getMonth(), expiry.getDate(), expiry.getHours(), expiry.getMinutes()]).toEqual(
      [2031, 2, 4, 23, 59],
    );
  });

  it("names the fields whose numbers are not whole or too small", () => {
    expect(parseApiKeyForm(form({ name: "x", scopes: ["infer"], priorityLevel: "-1", qpsQuota: "0.5" }))).toEqual({
      ok: false,
      fieldErrors: [
        { path: "priorityLevel", message: "a whole number, 0 or more" },
        { path: "qpsQuota", message: "a whole number, 1 or more" },
      ],
    });
  });

  it("checks the API's name and scope rules too, so they show with the number errors on the first submit", () => {
    expect(parseApiKeyForm(form({ name: " ", priorityLevel: "-1" }))).toEqual({
      ok: false,
      fieldErrors: [
        { path: "name", message: "required" },
        { path: "scopes", message: "pick at least one scope" },
        { path: "priorityLevel", message: "a whole number, 0 or more" },
      ],
    });
  });
});
