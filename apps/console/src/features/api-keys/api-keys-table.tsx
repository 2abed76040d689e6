"use client";

import type { RouterOutputs } from "@/lib/api-types";
import { formatDate, formatDateTime } from "@/lib/format";
import { keyLabel } from "./key-label";
import { KeyLimits } from "./key-limits";
import { RevokeApiKeyButton } from "./revoke-api-key-button";
import { TableScroller } from "@/components/table-scroller";

type ApiKeyRow = RouterOutputs["apiKeys"]["list"][number];

function KeyStatus({ apiKey, now }: { apiKey: ApiKeyRow; now: number }) {
  if (apiKey.revokedAt) {
    return (
      <>
        Revoked <span className="muted small">{formatDate(apiKey.revokedAt)}</span>
      </>
    );
  }
  if (apiKey.expiresAt && new Date(apiKey.expiresAt).getTime() <= now) return <>Expired</>;
  return <>Active</>;
}

export function ApiKeysTable({ keys, showOwner }: { keys: readonly ApiKeyRow[]; showOwner: boolean }) {
  const now = Date.now();
  return (
    <TableScroller label="API keys">
      <table>
        <caption className="visually-hidden">API keys</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Key</th>
            <th scope="col">Scopes</th>
            {showOwner ? <th scope="col">Owner</th> : null}
            <th scope="col">Limits</th>
            <th scope="col">Expires</th>
            <th scope="col">Last used</th>
            <th scope="col">Status</th>
            <th scope="col">
              <span className="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {keys.map((key) => (
            <tr key={key.id}>
              <th scope="row">
                {key.name}
                <span className="cell-note">created {formatDate(key.createdAt)}</span>
              </th>
              <td>
                <code>{keyLabel(key.prefix)}</code>
              </td>
              <td>{key.scopes.join(", ")}</td>
              {showOwner ? <td>{key.ownerEmail ?? key.ownerId}</td> : null}
              <td>
                <KeyLimits priorityLevel={key.priorityLevel} qpsQuota={key.qpsQuota} />
              </td>
              <td className="cell-nowrap">{formatDate(key.expiresAt, "never")}</td>
              <td>{formatDateTime(key.lastUsedAt, "never")}</td>
              <td>
                <KeyStatus apiKey={key} now={now} />
              </td>
              <td className="cell-actions">
                {key.revokedAt ? null : <RevokeApiKeyButton id={key.id} name={key.name} prefix={key.prefix} />}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableScroller>
  );
}
