"use client";

import { DataTable, type DataColumn } from "@/components/data-table/data-table";
import { TruncatedText } from "@/components/data-table/truncated-text";
import type { RouterOutputs } from "@/lib/api-types";
import { formatDate, formatDateTime } from "@/lib/format";
import { ResetPasswordButton } from "./reset-password-button";
import { UserAccessButton } from "./user-access-button";
import { UserRoleSelect } from "./user-role-select";

type UserRow = RouterOutputs["users"]["list"][number];

const time = (value: Date | string | null | undefined) => (value ? new Date(value).getTime() : null);

export function UsersTable({ users, currentUserId }: { users: readonly UserRow[]; currentUserId: string }) {
  const columns: DataColumn<UserRow>[] = [
    {
      // The name sits under the email: a column of its own would cost the dates and buttons their room.
      id: "email",
      header: "Email (name)",
      rowHeader: true,
      sortValue: (user) => user.email,
      cell: (user) => (
        <>
          <TruncatedText text={user.email} />
          {user.id === currentUserId ? <span className="badge badge-quiet">you</span> : null}
          {user.name ? (
            <span className="cell-note">
              <TruncatedText text={user.name} />
            </span>
          ) : null}
        </>
      ),
    },
    {
      id: "role",
      header: "Role",
      sortValue: (user) => user.role,
      cell: (user) => <UserRoleSelect id={user.id} email={user.email} role={user.role} />,
    },
    {
      id: "status",
      header: "Status",
      sortValue: (user) => (user.disabled ? 1 : 0),
      cell: (user) => (user.disabled ? "Disabled" : "Active"),
    },
    {
      id: "lastSignIn",
      header: "Last sign-in",
      nowrap: true,
      sortValue: (user) => time(user.lastLoginAt),
      cell: (user) => formatDateTime(user.lastLoginAt, "never"),
    },
    {
      id: "created",
      header: "Created",
      nowrap: true,
      sortValue: (user) => time(user.createdAt),
      cell: (user) => formatDate(user.createdAt),
    },
    {
      id: "actions",
      header: "Actions",
      hideHeader: true,
      actions: true,
      cell: (user) => (
        <div className="row-actions">
          {user.id === currentUserId ? null : <ResetPasswordButton id={user.id} email={user.email} />}
          <UserAccessButton id={user.id} email={user.email} disabled={user.disabled} />
        </div>
      ),
    },
  ];
  return (
    <DataTable
      label="Users"
      columns={columns}
      rows={users}
      rowKey={(user) => user.id}
      initialSort={{ column: "email" }}
      rowClassName={(user) => (user.disabled ? "row-muted" : undefined)}
    />
  );
}
