"use client";

import { formatBytes, formatMoney } from "@/lib/number-format";
import { ProfileActions } from "./profile-actions";
import type { HardwareProfile } from "./profile-types";
import { TableScroller } from "@/components/table-scroller";

function gpus(profile: HardwareProfile): string {
  if (profile.gpuCount === 0) return "—";
  const memory = profile.gpuMemoryBytes !== null ? `, ${formatBytes(profile.gpuMemoryBytes)} each` : "";
  return `${profile.gpuCount} × ${profile.gpuModel ?? "GPU"}${memory}`;
}

export function ProfilesTable({
  profiles,
  canEdit,
  onEdit,
}: {
  profiles: readonly HardwareProfile[];
  canEdit: boolean;
  onEdit: (id: string) => void;
}) {
  return (
    <TableScroller label="Hardware profiles">
      <table className="stack-table">
        <caption className="visually-hidden">Hardware profiles</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Kind</th>
            <th scope="col">CPU cores</th>
            <th scope="col">Memory</th>
            <th scope="col">GPUs</th>
            <th scope="col">Cost per hour</th>
            {canEdit ? (
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            ) : null}
          </tr>
        </thead>
        <tbody>
          {profiles.map((profile) => (
            <tr key={profile.id}>
              <th scope="row">
                {profile.name}
                {profile.isDefault ? <span className="badge badge-quiet">default</span> : null}
              </th>
              <td data-label="Kind">{profile.kind}</td>
              <td data-label="CPU cores">{profile.cpuCores ?? "—"}</td>
              <td data-label="Memory" className="cell-nowrap">
                {formatBytes(profile.memoryBytes)}
              </td>
              <td data-label="GPUs">{gpus(profile)}</td>
              <td data-label="Cost per hour" className="cell-nowrap">
                {formatMoney(profile.costPerHour, profile.currency)}
              </td>
              {canEdit ? (
                <td className="cell-actions">
                  <ProfileActions profile={profile} onEdit={() => onEdit(profile.id)} />
                </td>
              ) : null}
            </tr>
          ))}
        </tbody>
      </table>
    </TableScroller>
  );
}
