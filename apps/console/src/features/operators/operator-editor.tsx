"use client";

import { useMutation, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useRouter } from "next/navigation";
import { useId, useMemo, useState, type FormEvent } from "react";
import { FormAlert } from "@/components/form/form-alert";
import { TextField } from "@/components/form/text-field";
import { fieldChecks } from "@/components/form/field-checks";
import { useFormProblem } from "@/components/form/use-form-problem";
import { fieldMessage, formMessage } from "@/lib/api-problem";
import { useTRPC } from "@/lib/trpc";
import { OperatorGraph, type GraphEditing } from "./operator-graph";
import { isOperatorName } from "./operator-name";
import { problemEdges, problemNodeIds } from "@operon/operator-spec/problem-subjects";
import { specGraph } from "@operon/operator-spec/spec-graph";
import { ModelTensorLookup } from "./model-tensor-lookup";
import { SpecCodeEditor } from "./spec-code-editor";
import { SpecProblems } from "./spec-problems";
import { parseSpecText } from "./spec-text";
import { compactJson } from "./compact-json";
import { appendModelStep, type PaletteEntry } from "./palette-step";
import { useSpecValidation } from "./use-spec-validation";
import { useServedCatalog } from "./use-served-catalog";
import { graphPorts } from "./graph-ports";
import { connectPorts, disconnectPort, type SpecEdit } from "./spec-connections";
import { addBranch, controlChoices, removeBranch, removeExitAnswer, setExitAnswer } from "./spec-control-edges";
import { useModelSignatures } from "./use-model-signatures";
import { SubmitButton } from "@/components/form/submit-button";

export interface OperatorDraft {
  name: string;
  description: string;
  specText: string;
}

/**
 * The spec editor: JSON on one side; on the other, the gateway's problems
 * (asked as you type) and the graph, redrawn from every parseable version of
 * the text. Save creates the operator or stores a new version of it.
 */
export function OperatorEditor({ mode, initial }: { mode: "create" | "update"; initial: OperatorDraft }) {
  const trpc = useTRPC();
  const router = useRouter();
  const queryClient = useQueryClient();
  const id = useId();
  const [name, setName] = useState(initial.name);
  const [description, setDescription] = useState(initial.description);
  const [text, setText] = useState(initial.specText);
  const { problem, clear, fromError, atField, atFields } = useFormProblem();

  const parsed = useMemo(() => parseSpecText(text), [text]);
  const [lastGood, setLastGood] = useState(() => (parsed.ok ? parsed.spec : {}));
  if (parsed.ok && parsed.spec !== lastGood) setLastGood(parsed.spec);
  const graph = useMemo(() => specGraph(lastGood), [lastGood]);
  const validation = useSpecValidation(name, text);
  const problems = useMemo(() => (validation.status === "invalid" ? validation.problems : []), [validation]);
  const catalog = useServedCatalog();
  const blamed = useMemo(() => problemNodeIds(problems), [problems]);
  const mismatches = useMemo(() => problemEdges(problems), [problems]);
  const signatures = useModelSignatures(lastGood);
  const ports = useMemo(() => graphPorts(lastGood, signatures), [lastGood, signatures]);

  const onSaved = async (saved: { name: string }) => {
    await queryClient.invalidateQueries({ queryKey: trpc.operators.pathKey() });
    router.push(`/operators/${encodeURIComponent(saved.name)}`);
  };
  const create = useMutation(trpc.operators.create.mutationOptions({ onSuccess: onSaved, onError: fromError }));
  const update = useMutation(trpc.operators.update.mutationOptions({ onSuccess: onSaved, onError: fromError }));
  const saving = create.isPending || update.isPending;

  const specErrors =
    problem?.fieldErrors.filter((field) => field.path === "spec" || field.path.startsWith("spec.")) ?? [];
  const shownFields = ["name", "description", ...specErrors.map((field) => field.path)];
  const textareaId = `${id}-spec`;
  const describedBy = [`${id}-spec-hint`, specErrors.length > 0 ? `${id}-spec-error` : "", `${id}-problems`]
    .filter(Boolean)
    .join(" ");

  // The palette's "Add to spec": onto the text as it parses now (a text that does not parse is left alone, with the reason).
  const addStep = (entry: PaletteEntry) => {
    const current = parseSpecText(text);
    if (!current.ok) return atField("spec", `${entry.name} was not added: ${current.message}`);
    clear();
    setText(compactJson(appendModelStep(current.spec, entry)));
  };

  // The graph's connect and remove: edits of the text as it parses now, like the palette's (a text that does not parse is left alone).
  const editSpec = (edit: (spec: Record<string, unknown>) => SpecEdit) => {
    const current = parseSpecText(text);
    if (!current.ok) return { ok: false as const, message: `the spec does not parse (${current.message})` };
    const result = edit(current.spec);
    if (!result.ok) return result;
    clear();
    setText(compactJson(result.spec));
    return { ok: true as const };
  };
  const graphEditing: GraphEditing = {
    connect: (from, to) => editSpec((spec) => connectPorts(spec, from, to)),
    disconnect: (to) => editSpec((spec) => disconnectPort(spec, to)),
    control: {
      choices: controlChoices(lastGood),
      addBranch: (route, branch, step) => editSpec((spec) => addBranch(spec, route, branch, step)),
      removeBranch: (route, branch, step) => editSpec((spec) => removeBranch(spec, route, branch, step)),
      setExitAnswer: (exit, output, tensor) => editSpec((spec) => setExitAnswer(spec, exit, output, tensor)),
      removeExitAnswer: (exit, output) => editSpec((spec) => removeExitAnswer(spec, exit, output)),
    },
  };

  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    clear();
    const trimmed = name.trim();
    // Both fields at once: a bad name and a spec that does not parse show together (field-checks.ts).
    const found = fieldChecks([
      ["name", !isOperatorName(trimmed) && "letters, digits, '_', '.' and '-' only, starting with a letter or digit"],
      ["spec", !parsed.ok && parsed.message],
    ]);
    if (found.length > 0 || !parsed.ok) return atFields(found);
    const input = {
      name: trimmed,
      spec: parsed.spec,
      ...(description.trim() !== "" || mode === "update" ? { description: description.trim() } : {}),
    };
    if (mode === "create") create.mutate(input);
    else update.mutate(input);
  };

  return (
    <form
      className="operator-editor"
      onSubmit={submit}
      noValidate
      aria-label={mode === "create" ? "New operator" : `Edit operator ${initial.name}`}
    >
      <div className="form-grid">
        <TextField
          label="Name"
          name="name"
          value={name}
          onChange={(event) => setName(event.currentTarget.value)}
          readOnly={mode === "update"}
          required
          maxLength={128}
          autoComplete="off"
          spellCheck={false}
          hint={
            mode === "update"
              ? "An operator keeps its name; saving stores a new version."
              : "Clients call it by this name, like a model."
          }
          error={fieldMessage(problem, "name")}
        />
        <TextField
          label="Description (optional)"
          name="description"
          value={description}
          onChange={(event) => setDescription(event.currentTarget.value)}
          maxLength={2000}
          error={fieldMessage(problem, "description")}
        />
      </div>
      <div className="editor-columns">
        <div className="field editor-text">
          {/* A label element names only form controls; CodeMirror's editor is a contenteditable, named through aria-labelledby. */}
          <span
            id={`${id}-spec-label`}
            className="field-label"
            onClick={() => document.getElementById(textareaId)?.focus()}
          >
            Spec (JSON)
          </span>
          <p id={`${id}-spec-hint`} className="field-hint">
            inputs, outputs and steps (kind &quot;model&quot;, &quot;route&quot; or &quot;exit&quot;); the name comes
            from the Name field. Checked with the gateway as you type. <kbd>Ctrl</kbd>+<kbd>Space</kbd> completes step
            kinds, model names and each model&apos;s tensor names; the panel beside the editor lists them too.
          </p>
          <SpecCodeEditor
            id={textareaId}
            value={text}
            onChange={setText}
            labelledBy={`${id}-spec-label`}
            describedBy={describedBy}
            invalid={!parsed.ok || validation.status === "invalid" || specErrors.length > 0}
            problems={problems}
            catalog={catalog}
          />
          {specErrors.length > 0 ? (
            <ul id={`${id}-spec-error`} className="field-error problem-list">
              {specErrors.map((field, index) => (
                <li key={index}>{field.message}</li>
              ))}
            </ul>
          ) : null}
        </div>
        <div className="editor-side">
          <SpecProblems id={`${id}-problems`} parsed={parsed} validation={validation} />
          <ModelTensorLookup onAdd={addStep} />
        </div>
      </div>
      {/* Full width under both columns: the graph is where connections are made, and ports need room to be read and hit. */}
      <OperatorGraph
        graph={graph}
        ports={ports}
        editing={graphEditing}
        problemNodes={blamed}
        problemEdges={mismatches}
        title={parsed.ok ? "Graph" : "Graph (last valid JSON)"}
      />
      <FormAlert message={formMessage(problem, shownFields)} />
      <div className="form-actions">
        <SubmitButton
          pending={saving}
          label={mode === "create" ? "Create operator" : "Save new version"}
          pendingLabel="Saving…"
        />
        <Link
          className="button"
          href={mode === "create" ? "/operators" : `/operators/${encodeURIComponent(initial.name)}`}
        >
          Cancel
        </Link>
      </div>
    </form>
  );
}
