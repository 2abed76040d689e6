import type { RouterInputs } from "@/lib/api-types";

/** The audit page's filters as typed (datetime-local values are local wall-clock times). */
export interface AuditFilters {
  action: string;
  targetType: string;
  from: string;
  to: string;
}

export const NO_AUDIT_FILTERS: AuditFilters = { action: "", targetType: "", from: "", to: "" };

export const AUDIT_PAGE_SIZE = 50;

type AuditListInput = NonNullable<RouterInputs["audit"]["list"]>;

/** The audit.list input for one page: empty filters left out, local times sent as ISO instants. */
export function auditListInput(
  filters: AuditFilters,
  cursor: string | undefined,
  limit = AUDIT_PAGE_SIZE,
): AuditListInput {
  const from = localToIso(filters.from);
  const to = localToIso(filters.to);
  return {
    limit,
    ...(filters.action.trim() ? { action: filters.action.trim() } : {}),
    ...(filters.targetType.trim() ? { targetType: filters.targetType.trim() } : {}),
    ...(from ? { from } : {}),
    ...(to ? { to } : {}),
    ...(cursor ? { cursor } : {}),
  };
}

export function readAuditFilters(form: FormData): AuditFilters {
  const text = (name: string) => String(form.get(name) ?? "").trim();
  return { action: text("action"), targetType: text("targetType"), from: text("from"), to: text("to") };
}

function localToIso(value: string): string | undefined {
  if (!value) return undefined;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}
