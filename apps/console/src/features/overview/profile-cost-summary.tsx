import { formatHours, formatMoney, formatPercent } from "@/lib/number-format";
import type { CostReport } from "./overview-types";

/** Per hardware profile: what the host cost over the covered hours, and how much of it no model used. */
export function ProfileCostSummary({ profiles }: { profiles: CostReport["profiles"] }) {
  return (
    <ul className="plain-list">
      {profiles.map((profile) => (
        <li key={profile.profileId}>
          <strong>{profile.name}</strong> ({formatMoney(profile.costPerHour, profile.currency)}/h):{" "}
          {formatHours(profile.coveredHours)} sampled, host cost {formatMoney(profile.hostCost, profile.currency)}, of
          which {formatMoney(profile.unattributedCost, profile.currency)} unattributed (idle,{" "}
          {formatPercent(profile.unattributedShare)}).
        </li>
      ))}
    </ul>
  );
}
