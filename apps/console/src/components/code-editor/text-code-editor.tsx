"use client";

import { syntaxHighlighting } from "@codemirror/language";
import { EditorState, type Extension } from "@codemirror/state";
import { EditorView } from "@codemirror/view";
import { basicSetup } from "codemirror";
import { useEffect, useRef } from "react";
import { CODE_EDITOR_THEME, CODE_HIGHLIGHT } from "./code-editor-theme";

/**
 * A text in CodeMirror 6 with the console's theme (both colour schemes): highlighting from `language`, bracket
 * matching, folding, undo and search. Tab is left to the browser (moves focus), so the editor is no keyboard trap.
 * A value set from outside (a loaded file) replaces the text; typing reports through onChange.
 */
export function TextCodeEditor({
  id,
  value,
  onChange,
  labelledBy,
  describedBy,
  invalid,
  language,
  name,
}: {
  id: string;
  value: string;
  onChange: (text: string) => void;
  labelledBy: string;
  describedBy?: string | undefined;
  invalid: boolean;
  language: Extension;
  /** The hidden input holding the text, for reading it back without CodeMirror's API (tests, scripts). */
  name: string;
}) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const onChangeRef = useRef(onChange);
  onChangeRef.current = onChange;

  useEffect(() => {
    const editor = new EditorView({
      parent: host.current!,
      state: EditorState.create({
        doc: value,
        extensions: [
          basicSetup,
          language,
          EditorView.lineWrapping,
          syntaxHighlighting(CODE_HIGHLIGHT),
          CODE_EDITOR_THEME,
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
    // Created once: later values arrive through the effect below.
  }, []);

  useEffect(() => {
    const editor = view.current;
    if (editor && editor.state.doc.toString() !== value)
      editor.dispatch({ changes: { from: 0, to: editor.state.doc.length, insert: value } });
  }, [value]);

  useEffect(() => {
    const content = view.current?.contentDOM;
    if (!content) return;
    if (describedBy) content.setAttribute("aria-describedby", describedBy);
    else content.removeAttribute("aria-describedby");
    if (invalid) content.setAttribute("aria-invalid", "true");
    else content.removeAttribute("aria-invalid");
  }, [describedBy, invalid]);

  return (
    <>
      <div ref={host} className="spec-code-editor" />
      <input type="hidden" name={name} value={value} />
    </>
  );
}
