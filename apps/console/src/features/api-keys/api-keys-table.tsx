"use client";

import { DataTable, type DataColumn } from "@/components/data-table/data-table";
import { TruncatedText } from "@/components/data-table/truncated-text";
import type { RouterOutputs } from "@/lib/api-types";
import { formatDate, formatDateTime } from "@/lib/format";
import { keyLabel } from "./key-label";
import { KeyLimits } from "./key-limits";
import { RevokeApiKeyButton } from "./revoke-api-key-button";

type ApiKeyRow = RouterOutputs["apiKeys"]["list"][number];

const time = (value: Date | string | null | undefined) => (value ? new Date(value).getTime() : null);

function status(apiKey: ApiKeyRow, now: number): "Revoked" | "Expired" | "Active" {
  if (apiKey.revokedAt) return "Revoked";
  if (apiKey.expiresAt && new Date(apiKey.expiresAt).getTime() <= now) return "Expired";
  return "Active";
}

function KeyStatus({ apiKey, now }: { apiKey: ApiKeyRow; now: number }) {
  const value = status(apiKey, now);
  if (value === "Revoked") {
    return (
      <>
        Revoked <span className="muted small">{formatDate(apiKey.revokedAt)}</span>
      </>
    );
  }
  return <>{value}</>;
}

export function ApiKeysTable({ keys, showOwner }: { keys: readonly ApiKeyRow[]; showOwner: boolean }) {
  const now = Date.now();
  const columns: DataColumn<ApiKeyRow>[] = [
    {
      id: "name",
      header: "Name",
      rowHeader: true,
      sortValue: (key) => key.name,
      cell: (key) => (
        <>
          <TruncatedText text={key.name} />
          <span className="cell-note">created {formatDate(key.createdAt)}</span>
        </>
      ),
    },
    { id: "key", header: "Key", nowrap: true, cell: (key) => <code>{keyLabel(key.prefix)}</code> },
    { id: "scopes", header: "Scopes", sortValue: (key) => key.scopes.join(", "), cell: (key) => key.scopes.join(", ") },
    ...(showOwner
      ? [
          {
            id: "owner",
            header: "Owner",
            sortValue: (key: ApiKeyRow) => key.ownerEmail ?? key.ownerId,
            cell: (key: ApiKeyRow) => <TruncatedText text={key.ownerEmail ?? key.ownerId} size="short" />,
          },
        ]
      : []),
    {
      id: "limits",
      header: "Limits",
      cell: (key) => <KeyLimits priorityLevel={key.priorityLevel} qpsQuota={key.qpsQuota} />,
    },
    {
      id: "expires",
      header: "Expires",
      nowrap: true,
      sortValue: (key) => time(key.expiresAt),
      cell: (key) => formatDate(key.expiresAt, "never"),
    },
    {
      id: "lastUsed",
      header: "Last used",
      sortValue: (key) => time(key.lastUsedAt),
      cell: (key) => formatDateTime(key.lastUsedAt, "never"),
    },
    {
      id: "status",
      header: "Status",
      sortValue: (key) => status(key, now),
      cell: (key) => <KeyStatus apiKey={key} now={now} />,
    },
    {
      id: "actions",
      header: "Actions",
      hideHeader: true,
      actions: true,
      cell: (key) => (key.revokedAt ? null : <RevokeApiKeyButton id={key.id} name={key.name} prefix={key.prefix} />),
    },
  ];
  return <DataTable label="API keys" columns={columns} rows={keys} rowKey={(key) => key.id} />;
}
