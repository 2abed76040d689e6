"use client";

import { ConfirmButton } from "@/components/confirm-button";
import type { SearchCandidate } from "./config-search-types";
import { candidateLabel } from "./search-view-model";

/**
 * Applying a candidate reloads the model with a new config, so it asks first
 * and names what changes; the dialog keeps the API's message if it fails.
 */
export function ApplyCandidateButton({
  candidate,
  model,
  label,
  accessibleLabel,
  className,
  onApply,
}: {
  candidate: SearchCandidate;
  model: string;
  label: string;
  accessibleLabel?: string;
  className: string;
  onApply: (index: number) => Promise<unknown>;
}) {
  return (
    <ConfirmButton
      label={label}
      accessibleLabel={accessibleLabel}
      title={`Apply candidate #${candidate.index + 1} to ${model}?`}
      description={
        <p>
          {model} is reloaded with {candidateLabel(candidate)}, replacing its current config. The change is recorded in
          the audit log with this search.
        </p>
      }
      confirmLabel="Apply and reload"
      confirmClassName="button button-primary"
      className={className}
      onConfirm={() => onApply(candidate.index)}
    />
  );
}
