import { StreamLanguage, type StringStream } from "@codemirror/language";

/**
 * Protocol buffer text format (Triton's config.pbtxt) for CodeMirror: field names, strings, numbers, enum values
 * and true/false, comments and brackets, as token names CodeMirror maps to highlight tags. Highlighting only: the
 * API parses the text (and says where it does not parse).
 */
const pbtxt = StreamLanguage.define<{ inString: string | null }>({
  name: "pbtxt",
  startState: () => ({ inString: null }),
  token(stream: StringStream, state) {
    if (state.inString !== null) return continueString(stream, state);
    if (stream.eatSpace()) return null;
    if (stream.match("#")) {
      stream.skipToEnd();
      return "comment";
    }
    const quote = stream.peek();
    if (quote === '"' || quote === "'") {
      stream.next();
      state.inString = quote;
      return continueString(stream, state);
    }
    if (stream.match(/^-?(?:0x[0-9a-fA-F]+|\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+)[fF]?/)) return "number";
    if (stream.match(/^[A-Za-z_][A-Za-z0-9_.]*/)) {
      const word = stream.current();
      // A field name is followed by ':' or an opening bracket; a bare word after ':' is a value (an enum, a bool).
      if (stream.match(/^\s*(?::|\{|<|\[)/, false)) return "propertyName";
      return word === "true" || word === "false" || word === "True" || word === "False" ? "bool" : "atom";
    }
    const next = stream.next();
    if (next === "{" || next === "}" || next === "<" || next === ">") return "brace";
    if (next === "[" || next === "]") return "squareBracket";
    return "punctuation";
  },
  languageData: { commentTokens: { line: "#" } },
});

function continueString(stream: StringStream, state: { inString: string | null }): string {
  let escaped = false;
  for (let next = stream.next(); next !== undefined; next = stream.next()) {
    if (next === state.inString && !escaped) {
      state.inString = null;
      return "string";
    }
    escaped = !escaped && next === "\\";
  }
  // pbtxt strings end on their line: an unclosed one stops there too.
  state.inString = null;
  return "string";
}

export function pbtxtLanguage() {
  return pbtxt;
}
