/**
 * Lexer for protobuf text format. Lazy (one token of lookahead) so that the
 * first problem in a file is the one reported, whether it is lexical (an
 * unterminated string) or structural (an unknown field earlier on).
 *
 * A '-' sign is its own token: the parser folds it into the number that
 * follows, as protobuf's own tokenizer does. Strings are decoded here (C
 * escapes, \x / octal bytes, \u / \U code points; bytes are read as UTF-8).
 */
import { OperonError } from "@operon/protocol/errors";

export type TokenKind = "ident" | "number" | "string" | "punct" | "eof";

export interface Token {
  kind: TokenKind;
  /** Source text of the token (for a string: including its quotes). */
  text: string;
  /** Decoded contents, for string tokens only. */
  value?: string;
  /** 1-based position of the token's first character. */
  line: number;
  col: number;
}

const PUNCT = new Set(["{", "}", "<", ">", "[", "]", ":", ",", ";", "-"]);
const IDENT_START = /[A-Za-z_]/;
const IDENT_PART = /[A-Za-z0-9_]/;
const NUMBER = /0[xX][0-9a-fA-F]+|(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?[fF]?/y;

const SIMPLE_ESCAPES: Record<string, number> = {
  n: 0x0a,
  t: 0x09,
  r: 0x0d,
  a: 0x07,
  b: 0x08,
  f: 0x0c,
  v: 0x0b,
  "\\": 0x5c,
  "'": 0x27,
  '"': 0x22,
  "?": 0x3f,
};

/** The error every text-format problem becomes: "<source>:<line>:<col>: <message>". */
export function pbtxtError(source: string, at: { line: number; col: number }, message: string): OperonError {
  return new OperonError("INVALID_ARG", `${source}:${at.line}:${at.col}: ${message}`);
}

/** How a token is named in error messages. */
export function describeToken(token: Token): string {
  switch (token.kind) {
    case "eof":
      return "end of input";
    case "string":
      return `string ${token.text}`;
    case "number":
      return `number ${token.text}`;
    default:
      return `'${token.text}'`;
  }
}

export class PbtxtLexer {
  private pos = 0;
  private line = 1;
  private col = 1;
  private lookahead: Token | undefined;

  constructor(
    private readonly text: string,
    private readonly source: string,
  ) {}

  peek(): Token {
    this.lookahead ??= this.scan();
    return this.lookahead;
  }

  next(): Token {
    const token = this.peek();
    this.lookahead = undefined;
    return token;
  }

  private fail(at: { line: number; col: number }, message: string): never {
    throw pbtxtError(this.source, at, message);
  }

  private advance(count: number): void {
    for (let i = 0; i < count; i++) {
      if (this.text[this.pos] === "\n") {
        this.line++;
        this.col = 1;
      } else {
        this.col++;
      }
      this.pos++;
    }
  }

  private skipSpaceAndComments(): void {
    while (this.pos < this.text.length) {
      const ch = this.text[this.pos]!;
      if (ch === "#") {
        while (this.pos < this.text.length && this.text[this.pos] !== "\n") this.advance(1);
      } else if (/\s/.test(ch)) {
        this.advance(1);
      } else {
        return;
      }
    }
  }

  private scan(): Token {
    this.skipSpaceAndComments();
    const at = { line: this.line, col: this.col };
    if (this.pos >= this.text.length) return { kind: "eof", text: "", ...at };
    const ch = this.text[this.pos]!;
    const nextCh = this.text[this.pos + 1] ?? "";

    if (IDENT_START.test(ch)) {
      let end = this.pos + 1;
      while (end < this.text.length && IDENT_PART.test(this.text[end]!)) end++;
      return this.take("ident", end - this.pos, at);
    }
    if (/\d/.test(ch) || (ch === "." && /\d/.test(nextCh))) {
      NUMBER.lastIndex = this.pos;
      const match = NUMBER.exec(this.text);
      const length = match?.[0].length ?? 1;
      const after = this.text[this.pos + length];
      if (after !== undefined && (IDENT_PART.test(after) || after === ".")) {
        let end = this.pos + length;
        while (end < this.text.length && (IDENT_PART.test(this.text[end]!) || this.text[end] === ".")) end++;
        this.fail(at, `invalid number '${this.text.slice(this.pos, end)}'`);
      }
      return this.take("number", length, at);
    }
    if (ch === '"' || ch === "'") return this.scanString(ch, at);
    if (PUNCT.has(ch)) return this.take("punct", 1, at);
    this.fail(at, `unexpected character '${ch}'`);
  }

  private take(kind: TokenKind, length: number, at: { line: number; col: number }): Token {
    const text = this.text.slice(this.pos, this.pos + length);
    this.advance(length);
    return { kind, text, ...at };
  }

  private scanString(quote: string, at: { line: number; col: number }): Token {
    const start = this.pos;
    const bytes: number[] = [];
    this.advance(1);
    for (;;) {
      const ch = this.text[this.pos];
      if (ch === undefined || ch === "\n") this.fail(at, "unterminated string");
      if (ch === quote) {
        this.advance(1);
        break;
      }
      if (ch !== "\\") {
        // Whole code point, so surrogate pairs encode correctly.
        const cp = this.text.codePointAt(this.pos)!;
        const char = String.fromCodePoint(cp);
        bytes.push(...Buffer.from(char, "utf8"));
        this.advance(char.length);
        continue;
      }
      this.scanEscape(bytes);
    }
    const value = Buffer.from(bytes).toString("utf8");
    return { kind: "string", text: this.text.slice(start, this.pos), value, ...at };
  }

  private scanEscape(bytes: number[]): void {
    const at = { line: this.line, col: this.col };
    const esc = this.text[this.pos + 1];
    if (esc === undefined || esc === "\n") this.fail(at, "unterminated string");
    const simple = SIMPLE_ESCAPES[esc];
    if (simple !== undefined) {
      bytes.push(simple);
      this.advance(2);
      return;
    }
    const rest = this.text.slice(this.pos + 1);
    let match: RegExpMatchArray | null;
    if ((match = /^[0-7]{1,3}/.exec(rest))) {
      const value = parseInt(match[0], 8);
      if (value > 0xff) this.fail(at, `octal escape '\\${match[0]}' out of range`);
      bytes.push(value);
      this.advance(1 + match[0].length);
    } else if ((match = /^[xX]([0-9a-fA-F]{1,2})/.exec(rest))) {
      bytes.push(parseInt(match[1]!, 16));
      this.advance(1 + match[0].length);
    } else if ((match = /^(?:u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8}))/.exec(rest))) {
      const cp = parseInt(match[1] ?? match[2]!, 16);
      if (cp > 0x10ffff) this.fail(at, `unicode escape '\\${match[0]}' out of range`);
      bytes.push(...Buffer.from(String.fromCodePoint(cp), "utf8"));
      this.advance(1 + match[0].length);
    } else {
      this.fail(at, `invalid escape sequence '\\${esc}'`);
    }
  }
}
