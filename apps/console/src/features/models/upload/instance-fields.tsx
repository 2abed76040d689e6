"use client";

import { SelectField } from "@/components/form/select-field";
import type { ApiProblem } from "@/lib/api-problem";
import { INSTANCE_KINDS, instanceGroupOf, withInstanceGroup, type ConfigDraft } from "./config-draft";
import { errorAt } from "./config-field-errors";
import { instancePlacementHint } from "./instance-placement-hint";
import { ParsedTextField } from "./parsed-text-field";
import { formatOptionalNumber, parseWholeNumber } from "./parse-values";

/** The first instance group: how many instances serve the model, and on what. */
export function InstanceFields({
  draft,
  problem,
  onChange,
  reporter,
  defaultIsolation,
}: {
  draft: ConfigDraft;
  problem: ApiProblem | null;
  onChange: (draft: ConfigDraft) => void;
  reporter: (key: string) => (message: string | undefined) => void;
  /** The gateway's --backend-isolation; null while unknown. */
  defaultIsolation: "auto" | "thread" | "process" | null;
}) {
  const group = instanceGroupOf(draft);
  const kinds = INSTANCE_KINDS.some((kind) => kind.value === group.kind)
    ? INSTANCE_KINDS
    : [...INSTANCE_KINDS, { value: group.kind, label: group.kind }];
  return (
    <fieldset className="config-group">
      <legend>Instances</legend>
      <ParsedTextField
        label="Instance count"
        name="instance_group[0].count"
        inputMode="numeric"
        value={group.count}
        format={formatOptionalNumber}
        parse={(text) => parseWholeNumber(text, true)}
        onChange={(count) => onChange(withInstanceGroup(draft, { count }))}
        onValidity={reporter("instance_group[0].count")}
        hint={
          group.groups > 1
            ? `The first of ${group.groups} instance groups; edit the others in the JSON.`
            : instancePlacementHint(draft, defaultIsolation)
        }
        error={
          errorAt(problem, { path: "instance_group[0].count" }) ??
          errorAt(problem, { path: "instance_group", exact: true })
        }
      />
      <SelectField
        label="Instance kind"
        name="instance_group[0].kind"
        options={kinds}
        value={group.kind}
        onChange={(event) => onChange(withInstanceGroup(draft, { kind: event.target.value }))}
        error={errorAt(problem, { path: "instance_group[0].kind" })}
      />
    </fieldset>
  );
}
