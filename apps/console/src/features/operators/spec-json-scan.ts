/**
 * A tolerant, single-pass reading of JSON text as it is being typed (the
 * editor's text is often incomplete): where each value sits, and what the
 * cursor is in. It never throws; text after an error is read as well as it
 * can be. Used for the spec editor's completion and for placing the
 * gateway's problems at their lines.
 */
export type JsonPath = ReadonlyArray<string | number>;

/** An open object or array, from the outermost in. */
export interface JsonFrame {
  kind: "object" | "array";
  path: JsonPath;
  /** The key being read or last read (objects). */
  key: string | undefined;
  /** The element being read (arrays). */
  index: number;
  /** Objects: whether a key comes next. */
  expectKey: boolean;
  /** The keys seen so far, and the string values among them (e.g. a step's kind and model). */
  keys: string[];
  strings: Record<string, string>;
}

export interface JsonSpan {
  path: JsonPath;
  from: number;
  to: number;
  /** Where the value's key starts, for object members. */
  keyFrom?: number;
  /** The value itself when it is a string. */
  string?: string;
}

/** What the cursor is in: a string being typed (a key or a value), or the gap where a key or value goes. */
export interface JsonCursor {
  frames: JsonFrame[];
  /** "key": a member name of the innermost object; "value": the value of frames.at(-1)'s current key or element. */
  role: "key" | "value";
  /** Where the typed word starts (after the opening quote, when in a string). */
  from: number;
  inString: boolean;
}

const DELIMITERS = new Set([",", ":", "{", "}", "[", "]", '"']);

/** Reads text[0, until): every complete value's span, and the cursor's context at `until`. */
export function scanJson(text: string, until = text.length): { spans: JsonSpan[]; cursor: JsonCursor | undefined } {
  const spans: JsonSpan[] = [];
  const frames: JsonFrame[] = [];
  const starts: number[] = [];
  const keyStarts: Array<number | undefined> = [];
  let pendingKeyFrom: number | undefined;

  const slotPath = (): JsonPath | undefined => {
    const top = frames.at(-1);
    if (!top) return [];
    if (top.kind === "array") return [...top.path, top.index];
    return top.key === undefined ? undefined : [...top.path, top.key];
  };
  const record = (from: number, to: number, string?: string, keyFrom?: number) => {
    const path = slotPath();
    if (path === undefined) return;
    spans.push({
      path,
      from,
      to,
      ...(keyFrom !== undefined ? { keyFrom } : {}),
      ...(string !== undefined ? { string } : {}),
    });
    const top = frames.at(-1);
    if (top?.kind === "object" && top.key !== undefined && string !== undefined) top.strings[top.key] = string;
  };

  let i = 0;
  while (i < until) {
    const char = text[i]!;
    if (char === " " || char === "\n" || char === "\r" || char === "\t") {
      i++;
      continue;
    }
    const top = frames.at(-1);
    if (char === "{" || char === "[") {
      const path = slotPath() ?? [...(top?.path ?? []), "?"];
      frames.push({
        kind: char === "{" ? "object" : "array",
        path,
        key: undefined,
        index: 0,
        expectKey: char === "{",
        keys: [],
        strings: {},
      });
      starts.push(i);
      keyStarts.push(pendingKeyFrom);
      pendingKeyFrom = undefined;
      i++;
      continue;
    }
    if (char === "}" || char === "]") {
      if (frames.length > 0) {
        frames.pop();
        const from = starts.pop()!;
        const keyFrom = keyStarts.pop();
        record(from, i + 1, undefined, keyFrom);
      }
      i++;
      continue;
    }
    if (char === ",") {
      if (top?.kind === "object") {
        top.expectKey = true;
        top.key = undefined;
      } else if (top) top.index++;
      i++;
      continue;
    }
    if (char === ":") {
      if (top?.kind === "object") top.expectKey = false;
      i++;
      continue;
    }
    if (char === '"') {
      let j = i + 1;
      let value = "";
      while (j < until && text[j] !== '"') {
        if (text[j] === "\\" && j + 1 < until) {
          value += text[j + 1];
          j += 2;
        } else value += text[j++];
      }
      if (j >= until) {
        // The cursor is in this string.
        const role = top?.kind === "object" && top.expectKey ? "key" : "value";
        return { spans, cursor: { frames, role, from: i + 1, inString: true } };
      }
      if (top?.kind === "object" && top.expectKey) {
        top.key = value;
        top.keys.push(value);
        top.expectKey = false;
        pendingKeyFrom = i;
      } else {
        record(i, j + 1, value, pendingKeyFrom);
        pendingKeyFrom = undefined;
      }
      i = j + 1;
      continue;
    }
    // A number, true, false, null (or a typo): up to the next delimiter.
    let j = i;
    while (j < until && !DELIMITERS.has(text[j]!) && !/\s/.test(text[j]!)) j++;
    if (j >= until) {
      const role = top?.kind === "object" && top.expectKey ? "key" : "value";
      return { spans, cursor: { frames, role, from: i, inString: false } };
    }
    record(i, j, undefined, pendingKeyFrom);
    pendingKeyFrom = undefined;
    i = j;
  }
  const top = frames.at(-1);
  if (!top) return { spans, cursor: undefined };
  return {
    spans,
    cursor: { frames, role: top.kind === "object" && top.expectKey ? "key" : "value", from: until, inString: false },
  };
}

export function samePath(a: JsonPath, b: JsonPath): boolean {
  return a.length === b.length && a.every((segment, index) => segment === b[index]);
}
