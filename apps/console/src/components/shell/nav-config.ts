// Relative imports: this module is unit-tested outside Next (no "@/" alias there).
import type { Role } from "../../lib/api-types";
import { hasRole } from "../../lib/roles";

/**
 * Every section of the console, in menu order. A section whose page does not
 * exist yet has `available: false` and is not linked; switch it on when its
 * page lands. `minRole` hides sections the user's role cannot open.
 */
export interface NavItem {
  href: string;
  label: string;
  minRole: Role;
  available: boolean;
}

export const NAV_ITEMS: readonly NavItem[] = [
  { href: "/", label: "Overview", minRole: "VIEWER", available: true },
  { href: "/models", label: "Models", minRole: "VIEWER", available: true },
  { href: "/operators", label: "Operators", minRole: "VIEWER", available: true },
  { href: "/perf", label: "Perf reports", minRole: "VIEWER", available: true },
  { href: "/workers", label: "Workers", minRole: "VIEWER", available: true },
  { href: "/scheduler", label: "Scheduler", minRole: "VIEWER", available: true },
  { href: "/jobs", label: "Jobs", minRole: "ENGINEER", available: true },
  { href: "/api-keys", label: "API keys", minRole: "ENGINEER", available: true },
  { href: "/users", label: "Users", minRole: "ADMIN", available: true },
  { href: "/audit", label: "Audit", minRole: "ADMIN", available: true },
  { href: "/tenants", label: "Tenants", minRole: "ADMIN", available: true },
  { href: "/hardware", label: "Hardware & cost", minRole: "VIEWER", available: true },
];

export function visibleNavItems(role: Role, items: readonly NavItem[] = NAV_ITEMS): NavItem[] {
  return items.filter((item) => item.available && hasRole(role, item.minRole));
}

/** Whether `pathname` is inside the section at `href` ("/" only matches itself). */
export function isCurrentSection(pathname: string, href: string): boolean {
  return href === "/" ? pathname === "/" : pathname === href || pathname.startsWith(`${href}/`);
}
