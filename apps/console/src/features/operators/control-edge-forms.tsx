"use client";

import { useId, useState } from "react";
import type { EditOutcome } from "./spec-connections";
import { type BranchKey, branchText, type ControlChoices } from "./spec-control-edges";

/** The editor's branch and exit edits (spec-control-edges.ts), with the choices the spec offers now. */
export interface ControlEditing {
  choices: ControlChoices;
  addBranch(route: string, branch: BranchKey, step: string): EditOutcome;
  removeBranch(route: string, branch: BranchKey, step: string): EditOutcome;
  setExitAnswer(exit: string, output: string, tensor: string): EditOutcome;
  removeExitAnswer(exit: string, output: string): EditOutcome;
}

/** `current` when it is still among `options`, else the first option ("" when none). */
function pick(current: string, options: readonly string[]): string {
  return options.includes(current) ? current : (options[0] ?? "");
}

/**
 * Under the graph in the editor: add a route's branch (route, which of its
 * branches, the step it runs) and set an exit's answer (exit, operator
 * output, tensor). Plain selects and buttons, so both work from the
 * keyboard; the new edge appears in the graph and in the Connections list,
 * where its Remove button takes it away again. Fieldsets, not forms: they
 * sit inside the operator's own form, and their buttons never submit it.
 */
export function ControlEdgeForms({
  control,
  onStatus,
}: {
  control: ControlEditing;
  onStatus: (message: string) => void;
}) {
  const id = useId();
  const { routes, exits, steps, outputs, tensors } = control.choices;
  const [routeId, setRouteId] = useState("");
  const [branchValue, setBranchValue] = useState("");
  const [stepId, setStepId] = useState("");
  const [exitId, setExitId] = useState("");
  const [output, setOutput] = useState("");
  const [tensor, setTensor] = useState("");

  const route = routes.find(
    (entry) =>
      entry.id ===
      pick(
        routeId,
        routes.map((r) => r.id),
      ),
  );
  const branches = route?.branches ?? [];
  const branch = pick(
    branchValue,
    branches.map((b) => String(b.key)),
  );
  const targets = steps.filter((step) => step !== route?.id);
  const target = pick(stepId, targets);
  const exit = pick(exitId, exits);
  const answered = pick(output, outputs);

  if (routes.length === 0 && exits.length === 0) return null;

  const addBranch = () => {
    if (route === undefined || branch === "" || target === "") return;
    const key: BranchKey = branch === "default" ? "default" : Number(branch);
    const outcome = control.addBranch(route.id, key, target);
    onStatus(
      outcome.ok
        ? `Added a branch: route ${route.id} runs ${target} on ${branchText(key)}.`
        : `Not added: ${outcome.message}.`,
    );
  };
  const setAnswer = () => {
    if (exit === "" || answered === "") return;
    const outcome = control.setExitAnswer(exit, answered, tensor);
    onStatus(
      outcome.ok ? `Exit ${exit} now answers ${answered} with ${tensor.trim()}.` : `Not set: ${outcome.message}.`,
    );
  };

  return (
    <div className="graph-control-edges">
      {routes.length > 0 ? (
        <fieldset>
          <legend>Add a branch</legend>
          <LabelledSelect
            label="Route"
            value={route?.id ?? ""}
            options={routes.map((entry) => entry.id)}
            onChange={setRouteId}
          />
          <label>
            Branch
            <select value={branch} onChange={(event) => setBranchValue(event.target.value)}>
              {branches.map((entry) => (
                <option key={String(entry.key)} value={String(entry.key)}>
                  {entry.text}
                </option>
              ))}
            </select>
          </label>
          <LabelledSelect label="Runs step" value={target} options={targets} onChange={setStepId} />
          <button type="button" className="button" onClick={addBranch} disabled={target === ""}>
            Add branch
          </button>
        </fieldset>
      ) : null}
      {exits.length > 0 ? (
        <fieldset>
          <legend>Set an exit's answer</legend>
          <LabelledSelect label="Exit" value={exit} options={exits} onChange={setExitId} />
          <LabelledSelect label="Operator output" value={answered} options={outputs} onChange={setOutput} />
          <label>
            Answered with tensor
            <input
              type="text"
              list={`${id}-tensors`}
              value={tensor}
              onChange={(event) => setTensor(event.target.value)}
              onKeyDown={(event) => {
                // Enter sets the answer here; in a text field it would otherwise submit the operator's form.
                if (event.key !== "Enter") return;
                event.preventDefault();
                setAnswer();
              }}
              autoComplete="off"
              spellCheck={false}
            />
          </label>
          <datalist id={`${id}-tensors`}>
            {tensors.map((entry) => (
              <option key={entry} value={entry} />
            ))}
          </datalist>
          <button type="button" className="button" onClick={setAnswer} disabled={answered === ""}>
            Set answer
          </button>
        </fieldset>
      ) : null}
    </div>
  );
}

/** A select of plain names inside its label (each option's text is its value). */
function LabelledSelect({
  label,
  value,
  options,
  onChange,
}: {
  label: string;
  value: string;
  options: readonly string[];
  onChange: (value: string) => void;
}) {
  return (
    <label>
      {label}
      <select value={value} onChange={(event) => onChange(event.target.value)}>
        {options.map((option) => (
          <option key={option} value={option}>
            {option}
          </option>
        ))}
      </select>
    </label>
  );
}
