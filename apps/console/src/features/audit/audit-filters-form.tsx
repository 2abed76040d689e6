"use client";

import type { FormEvent } from "react";
import { TextField } from "@/components/form/text-field";
import { NO_AUDIT_FILTERS, readAuditFilters, type AuditFilters } from "./audit-filters";

export function AuditFiltersForm({
  filters,
  onApply,
}: {
  filters: AuditFilters;
  onApply: (filters: AuditFilters) => void;
}) {
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    onApply(readAuditFilters(new FormData(event.currentTarget)));
  };
  // The key remounts the fields when the filters are cleared from outside.
  return (
    <form
      key={JSON.stringify(filters)}
      onSubmit={submit}
      className="form filters"
      role="search"
      aria-label="Filter audit events"
    >
      <TextField
        label="Action starts with"
        name="action"
        defaultValue={filters.action}
        placeholder="apiKey."
        hint="e.g. user., apiKey.revoke, auth."
      />
      <TextField
        label="Target type"
        name="targetType"
        defaultValue={filters.targetType}
        placeholder="User"
        hint="e.g. User, ApiKey"
      />
      <TextField label="From" name="from" type="datetime-local" defaultValue={filters.from} />
      <TextField label="To" name="to" type="datetime-local" defaultValue={filters.to} />
      <div className="form-actions">
        <button type="submit" className="button button-primary">
          Apply filters
        </button>
        <button type="button" className="button" onClick={() => onApply(NO_AUDIT_FILTERS)}>
          Clear
        </button>
      </div>
    </form>
  );
}
