import { HighlightStyle } from "@codemirror/language";
import { EditorView } from "@codemirror/view";
import { tags } from "@lezer/highlight";

/**
 * Token colours from the stylesheet's variables, so the editor follows the
 * light and dark themes and keeps 4.5:1 contrast in both (CodeMirror's
 * default style is for light backgrounds only).
 */
export const CODE_HIGHLIGHT = HighlightStyle.define([
  { tag: tags.propertyName, color: "var(--color-code-property)" },
  { tag: tags.string, color: "var(--color-code-string)" },
  { tag: [tags.number, tags.bool, tags.null, tags.atom], color: "var(--color-code-literal)" },
  { tag: [tags.brace, tags.squareBracket, tags.separator, tags.punctuation], color: "var(--color-text-muted)" },
  { tag: tags.comment, color: "var(--color-text-muted)", fontStyle: "italic" },
]);

export const CODE_EDITOR_THEME = EditorView.theme({
  "&": {
    backgroundColor: "var(--color-surface)",
    color: "var(--color-text)",
    border: "1px solid var(--color-border-strong)",
    borderRadius: "var(--radius)",
  },
  "&.cm-focused": { outline: "3px solid var(--color-focus)", outlineOffset: "2px" },
  ".cm-content": { fontFamily: "var(--font-mono)", fontSize: "0.85rem", caretColor: "var(--color-text)" },
  ".cm-gutters": {
    backgroundColor: "var(--color-bg)",
    color: "var(--color-text-muted)",
    borderRight: "1px solid var(--color-border)",
  },
  ".cm-activeLine, .cm-activeLineGutter": { backgroundColor: "var(--color-accent-soft)" },
  ".cm-cursor": { borderLeftColor: "var(--color-text)" },
  "&.cm-focused .cm-selectionBackground, .cm-selectionBackground, ::selection": {
    backgroundColor: "var(--color-code-selection)",
  },
  ".cm-tooltip": {
    backgroundColor: "var(--color-surface)",
    color: "var(--color-text)",
    border: "1px solid var(--color-border)",
  },
});
