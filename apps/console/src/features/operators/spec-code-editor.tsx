"use client";

import { autocompletion } from "@codemirror/autocomplete";
import { json, jsonParseLinter } from "@codemirror/lang-json";
import { syntaxHighlighting } from "@codemirror/language";
import { linter, lintGutter } from "@codemirror/lint";
import { EditorState, StateEffect, StateField } from "@codemirror/state";
import { EditorView } from "@codemirror/view";
import { basicSetup } from "codemirror";
import { useEffect, useRef } from "react";
import { CODE_EDITOR_THEME, CODE_HIGHLIGHT } from "@/components/code-editor/code-editor-theme";
import { specCompletion, type ServedCatalog } from "./spec-completion";
import { problemDiagnostics } from "./spec-problem-lint";

/** The gateway's latest problems with the spec, set from outside; the lint source below places them. */
const setProblems = StateEffect.define<readonly string[]>();
const problemsField = StateField.define<readonly string[]>({
  create: () => [],
  update: (problems, transaction) =>
    transaction.effects.reduce((current, effect) => (effect.is(setProblems) ? effect.value : current), problems),
});

/**
 * The operator spec as JSON in CodeMirror 6: highlighting, bracket matching,
 * folding, undo, search, completion from the spec's JSON Schema and from the
 * served models (spec-completion.ts), JSON syntax errors marked where they
 * are, and the gateway's problems marked at the steps and fields they name
 * (spec-problem-lint.ts; the full list stays beside the editor). Tab is left to the browser
 * (move focus), so the editor is no keyboard trap.
 */
export function SpecCodeEditor({
  id,
  value,
  onChange,
  labelledBy,
  describedBy,
  invalid,
  problems,
  catalog,
}: {
  id: string;
  value: string;
  onChange: (text: string) => void;
  labelledBy: string;
  describedBy: string;
  invalid: boolean;
  /** The gateway's problems with the current spec ([] when none or not known yet). */
  problems: readonly string[];
  catalog: ServedCatalog;
}) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const onChangeRef = useRef(onChange);
  onChangeRef.current = onChange;
  const catalogRef = useRef(catalog);
  catalogRef.current = catalog;

  useEffect(() => {
    const editor = new EditorView({
      parent: host.current!,
      state: EditorState.create({
        doc: value,
        extensions: [
          basicSetup,
          json(),
          linter(jsonParseLinter(), { delay: 300 }),
          problemsField,
          linter((view) => problemDiagnostics(view.state.doc.toString(), view.state.field(problemsField)), {
            delay: 100,
            needsRefresh: (update) =>
              update.transactions.some((transaction) => transaction.effects.some((effect) => effect.is(setProblems))),
          }),
          autocompletion({
            override: [
              specCompletion({
                modelNames: () => catalogRef.current.modelNames(),
                modelTensors: (model) => catalogRef.current.modelTensors(model),
              }),
            ],
          }),
          lintGutter(),
          EditorView.lineWrapping,
          syntaxHighlighting(CODE_HIGHLIGHT),
          CODE_EDITOR_THEME,
          // tabindex: contenteditable is focusable anyway; saying so lets checkers (axe) see the scroll area's keyboard access.
          EditorView.contentAttributes.of({
            id,
            tabindex: "0",
            "aria-labelledby": labelledBy,
            spellcheck: "false",
            autocapitalize: "off",
            autocorrect: "off",
          }),
          EditorView.updateListener.of((update) => {
            if (update.docChanged) onChangeRef.current(update.state.doc.toString());
          }),
        ],
      }),
    });
    view.current = editor;
    return () => {
      editor.destroy();
      view.current = null;
    };
    // Created once: later values arrive through the effect below, attributes through the one after it.
  }, []);

  // A value set from outside (not typed here) replaces the text.
  useEffect(() => {
    const editor = view.current;
    if (editor && editor.state.doc.toString() !== value)
      editor.dispatch({ changes: { from: 0, to: editor.state.doc.length, insert: value } });
  }, [value]);

  useEffect(() => {
    view.current?.dispatch({ effects: setProblems.of(problems) });
  }, [problems]);

  // Attributes that change with the validation, set on CodeMirror's own content element.
  useEffect(() => {
    const content = view.current?.contentDOM;
    if (!content) return;
    content.setAttribute("aria-describedby", describedBy);
    if (invalid) content.setAttribute("aria-invalid", "true");
    else content.removeAttribute("aria-invalid");
  }, [describedBy, invalid]);

  return (
    <>
      <div ref={host} className="spec-code-editor" />
      {/* The text as the form holds it, for reading back (tests, scripts) without CodeMirror's API. */}
      <input type="hidden" name="spec" value={value} />
    </>
  );
}
