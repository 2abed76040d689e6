"use client";

import { formatBytes, formatMoney } from "@/lib/number-format";
import { ProfileActions } from "./profile-actions";
import type { HardwareProfile } from "./profile-types";
import { DataTable, type DataColumn } from "@/components/data-table/data-table";
import { TruncatedText } from "@/components/data-table/truncated-text";

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
  const columns: DataColumn<HardwareProfile>[] = [
    {
      id: "name",
      header: "Name",
      rowHeader: true,
      sortValue: (profile) => profile.name,
      cell: (profile) => (
        <>
          <TruncatedText text={profile.name} />
          {profile.isDefault ? <span className="badge badge-quiet">default</span> : null}
        </>
      ),
    },
    { id: "kind", header: "Kind", sortValue: (profile) => profile.kind, cell: (profile) => profile.kind },
    {
      id: "cores",
      header: "CPU cores",
      numeric: true,
      sortValue: (profile) => profile.cpuCores,
      cell: (profile) => profile.cpuCores ?? "—",
    },
    {
      id: "memory",
      header: "Memory",
      numeric: true,
      sortValue: (profile) => profile.memoryBytes,
      cell: (profile) => formatBytes(profile.memoryBytes),
    },
    { id: "gpus", header: "GPUs", sortValue: (profile) => profile.gpuCount, cell: gpus },
    {
      id: "cost",
      header: "Cost per hour",
      numeric: true,
      sortValue: (profile) => profile.costPerHour,
      cell: (profile) => formatMoney(profile.costPerHour, profile.currency),
    },
    ...(canEdit
      ? [
          {
            id: "actions",
            header: "Actions",
            hideHeader: true,
            actions: true,
            cell: (profile: HardwareProfile) => <ProfileActions profile={profile} onEdit={() => onEdit(profile.id)} />,
          },
        ]
      : []),
  ];
  return (
    <DataTable
      label="Hardware profiles"
      columns={columns}
      rows={profiles}
      rowKey={(profile) => profile.id}
      initialSort={{ column: "name" }}
    />
  );
}
