"use client";

import { useMutation, useQueryClient } from "@tanstack/react-query";
import { ConfirmButton } from "@/components/confirm-button";
import { TableScroller } from "@/components/table-scroller";
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
  return (
    <TableScroller label="Tenants">
      <table className="stack-table">
        <caption className="visually-hidden">Tenants</caption>
        <thead>
          <tr>
            <th scope="col">Tenant</th>
            <th scope="col">Kind</th>
            <th scope="col">Share</th>
            <th scope="col">Over its share</th>
            <th scope="col">Keys</th>
            <th scope="col">
              <span className="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {tenants.map((tenant) => (
            <tr key={tenant.id}>
              <th scope="row">{tenant.name}</th>
              <td data-label="Kind">{KIND_LABELS[tenant.kind]}</td>
              <td data-label="Share">{formatNumber(tenant.share)}</td>
              <td data-label="Over its share">{tenant.policy === "REFUSE" ? "refused (429)" : "queued"}</td>
              <td data-label="Keys">
                {tenant.keys.length === 0
                  ? "—"
                  : tenant.keys.map((key) => `${key.name} (opk_${key.prefix}…)`).join(", ")}
              </td>
              <td className="cell-actions">
                {tenant.kind === "group" ? (
                  <>
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
                  </>
                ) : null}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableScroller>
  );
}
