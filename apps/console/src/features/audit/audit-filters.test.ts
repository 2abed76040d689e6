import { describe, expect, it } from "vitest";
import { auditListInput, NO_AUDIT_FILTERS, readAuditFilters } from "./audit-filters";

describe("auditListInput", () => {
  it("asks for a page without filters", () => {
    expect(auditListInput(NO_AUDIT_FILTERS, undefined, 50)).toEqual({ limit: 50 });
  });

  it("sends filled filters, local times as instants, and the cursor", () => {
    const input = auditListInput(
      { action: " apiKey. ", targetType: "ApiKey", from: "2030-01-02T03:04", to: "" },
      "1234",
      20,
    );
    expect(input).toEqual({
      limit: 20,
      action: "apiKey.",
      targetType: "ApiKey",
      from: new Date("2030-01-02T03:04").toISOString(),
      cursor: "1234",
    });
  });

  it("drops a date it cannot read rather than sending it", () => {
    expect(auditListInput({ ...NO_AUDIT_FILTERS, to: "not a date" }, undefined, 10)).toEqual({ limit: 10 });
  });
});

describe("readAuditFilters", () => {
  it("reads the form's fields, trimmed", () => {
    const data = new FormData();
    data.append("action", " user. ");
    data.append("targetType", "User");
    expect(readAuditFilters(data)).toEqual({ action: "user.", targetType: "User", from: "", to: "" });
  });
});
