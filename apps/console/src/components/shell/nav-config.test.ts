import { describe, expect, it } from "vitest";
import { isCurrentSection, NAV_ITEMS, visibleNavItems, type NavItem } from "./nav-config";

const ITEMS: NavItem[] = [
  { href: "/", label: "Overview", minRole: "VIEWER", available: true },
  { href: "/soon", label: "Soon", minRole: "VIEWER", available: false },
  { href: "/keys", label: "Keys", minRole: "ENGINEER", available: true },
  { href: "/people", label: "People", minRole: "ADMIN", available: true },
];

describe("the console's navigation", () => {
  it("links only pages that exist, and only those the role may open", () => {
    expect(visibleNavItems("VIEWER", ITEMS).map((item) => item.label)).toEqual(["Overview"]);
    expect(visibleNavItems("ENGINEER", ITEMS).map((item) => item.label)).toEqual(["Overview", "Keys"]);
    expect(visibleNavItems("ADMIN", ITEMS).map((item) => item.label)).toEqual(["Overview", "Keys", "People"]);
  });

  it("lists every planned section in one place, so switching one on is one flag", () => {
    expect(NAV_ITEMS.map((item) => item.label)).toEqual([
      "Overview",
      "Models",
      "Operators",
      "Perf reports",
      "Workers",
      "Scheduler",
      "Jobs",
      "API keys",
      "Users",
      "Audit",
      "Tenants",
      "Hardware & cost",
    ]);
    expect(new Set(NAV_ITEMS.map((item) => item.href)).size).toBe(NAV_ITEMS.length);
    expect(visibleNavItems("ADMIN").map((item) => item.label)).toEqual(
      expect.arrayContaining(["Overview", "API keys", "Users", "Audit"]),
    );
  });

  it("marks the section of nested pages, and the overview only at /", () => {
    expect(isCurrentSection("/users", "/users")).toBe(true);
    expect(isCurrentSection("/users/42", "/users")).toBe(true);
    expect(isCurrentSection("/users-old", "/users")).toBe(false);
    expect(isCurrentSection("/users", "/")).toBe(false);
    expect(isCurrentSection("/", "/")).toBe(true);
  });
});
