"use client";

import { useMutation, useQueryClient } from "@tanstack/react-query";
import { ConfirmButton } from "@/components/confirm-button";
import { DataTable, type DataColumn } from "@/components/data-table/data-table";
import { TruncatedText } from "@/components/data-table/truncated-text";
import { formatNumber } from "@/lib/number-format";
import { useTRPC } from "@/lib/trpc";
import type { Tenant } from "./tenant-types";

const KIND_LABELS: Record<Tenant["kind"], string> = { group: "group", owner: "key owner", anonymous: "no key" };

export function TenantsTable({ tenants, onEdit }: { tenants: readonly Tenant[]; onEdit: (id: string) => void }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const remove = useMutation(
    trpc.tenants.delete.mutationOptions({
      onSuccess: () => queryClient.invalidateQueries({ queryKey: trpc.tenants.list.queryKey() }),
    }),
  );
  const columns: DataColumn<Tenant>[] = [
    {
      id: "tenant",
      header: "Tenant",
      rowHeader: true,
      sortValue: (tenant) => tenant.name,
      cell: (tenant) => <TruncatedText text={tenant.name} />,
    },
    { id: "kind", header: "Kind", sortValue: (tenant) => tenant.kind, cell: (tenant) => KIND_LABELS[tenant.kind] },
    {
      id: "share",
      header: "Share",
      numeric: true,
      sortValue: (tenant) => tenant.share,
      cell: (tenant) => formatNumber(tenant.share),
    },
    {
      id: "policy",
      header: "Over its share",
      sortValue: (tenant) => tenant.policy,
      cell: (tenant) => (tenant.policy === "REFUSE" ? "refused (429)" : "queued"),
    },
    {
      id: "keys",
      header: "Keys",
      cell: (tenant) =>
        tenant.keys.length === 0 ? "—" : tenant.keys.map((key) => `${key.name} (opk_${key.prefix}…)`).join(", "),
    },
    {
      id: "actions",
      header: "Actions",
      hideHeader: true,
      actions: true,
      cell: (tenant) =>
        tenant.kind === "group" ? (
          <div className="row-actions">
            <button
              type="button"
              className="button"
              aria-label={`Edit tenant ${tenant.name}`}
              onClick={() => onEdit(tenant.id)}
            >
              Edit
            </button>
            <ConfirmButton
              label="Delete"
              accessibleLabel={`Delete tenant ${tenant.name}`}
              title={`Delete tenant “${tenant.name}”?`}
              description={
                <p>Its keys count for their owners again. Deleting the last tenant turns traffic shares off.</p>
              }
              confirmLabel="Delete tenant"
              onConfirm={() => remove.mutateAsync({ id: tenant.id })}
            />
          </div>
        ) : null,
    },
  ];
  return <DataTable label="Tenants" columns={columns} rows={tenants} rowKey={(tenant) => tenant.id} />;
}
