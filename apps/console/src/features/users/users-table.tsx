"use client";

import type { RouterOutputs } from "@/lib/api-types";
import { formatDate, formatDateTime } from "@/lib/format";
import { ResetPasswordButton } from "./reset-password-button";
import { UserAccessButton } from "./user-access-button";
import { UserRoleSelect } from "./user-role-select";
import { TableScroller } from "@/components/table-scroller";
import { BreakableText } from "@/components/breakable-text";

type UserRow = RouterOutputs["users"]["list"][number];

export function UsersTable({ users, currentUserId }: { users: readonly UserRow[]; currentUserId: string }) {
  return (
    <TableScroller label="Users">
      <table>
        <caption className="visually-hidden">Users</caption>
        <thead>
          <tr>
            <th scope="col">Email</th>
            <th scope="col">Name</th>
            <th scope="col">Role</th>
            <th scope="col">Status</th>
            <th scope="col">Last sign-in</th>
            <th scope="col">Created</th>
            <th scope="col">
              <span className="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {users.map((user) => (
            <tr key={user.id} className={user.disabled ? "row-muted" : undefined}>
              <th scope="row">
                <BreakableText text={user.email} />
                {user.id === currentUserId ? <span className="badge badge-quiet">you</span> : null}
              </th>
              <td>{user.name ?? "—"}</td>
              <td>
                <UserRoleSelect id={user.id} email={user.email} role={user.role} />
              </td>
              <td>{user.disabled ? "Disabled" : "Active"}</td>
              <td>{formatDateTime(user.lastLoginAt, "never")}</td>
              <td className="cell-nowrap">{formatDate(user.createdAt)}</td>
              <td className="cell-actions">
                <div className="row-actions">
                  {user.id === currentUserId ? null : <ResetPasswordButton id={user.id} email={user.email} />}
                  <UserAccessButton id={user.id} email={user.email} disabled={user.disabled} />
                </div>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableScroller>
  );
}
