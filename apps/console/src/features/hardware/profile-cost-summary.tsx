import { formatHours, formatMoney, formatPercent } from "@/lib/number-format";
import type { ProfileCost } from "./cost-types";
import { FactList } from "@/components/fact-list";

/** What one host cost over the range, and how much of it no model used (the idle share). */
export function ProfileCostSummary({ profile }: { profile: ProfileCost }) {
  const facts: Array<[string, string]> = [
    ["Time sampled", formatHours(profile.coveredHours)],
    ["Host cost", formatMoney(profile.hostCost, profile.currency)],
    ["Attributed to models", formatMoney(profile.attributedCost, profile.currency)],
    [
      "Unattributed (idle)",
      `${formatMoney(profile.unattributedCost, profile.currency)} (${formatPercent(profile.unattributedShare)})`,
    ],
  ];
  return (
    <div className="profile-cost">
      <h3>
        {profile.name}{" "}
        <span className="muted small">at {formatMoney(profile.costPerHour, profile.currency)} per hour</span>
      </h3>
      <FactList facts={facts} />
    </div>
  );
}
