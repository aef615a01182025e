/**
 * JSON text read as Python's `json.loads` reads it: `2` is an int and `2.0` a float (a
 * `Float` box when integral), integers past the safe range are `bigint`s, `NaN` and
 * `Infinity` are accepted. Objects keep their keys' order (except integer-like keys, which
 * JavaScript objects put first).
 */
import { Float, mkInt, setKey, type Dict } from "./values.js";

class Reader {
  pos = 0;
  constructor(readonly text: string) {}

  fail(what: string): never {
    throw new SyntaxError(`JSON: ${what} at position ${String(this.pos)}`);
  }

  skip(): void {
    while (this.pos < this.text.length && " \t\n\r".includes(this.text.charAt(this.pos))) this.pos++;
  }

  value(): unknown {
    this.skip();
    const ch = this.text.charAt(this.pos);
    if (ch === "{") return this.object();
    if (ch === "[") return this.array();
    if (ch === '"') return this.string();
    for (const [word, v] of WORDS) {
      if (this.text.startsWith(word, this.pos)) {
        this.pos += word.length;
        return v;
      }
    }
    return this.number();
  }

  object(): Dict {
    this.pos++;
    const out: Dict = {};
    this.skip();
    if (this.text.charAt(this.pos) === "}") {
      this.pos++;
      return out;
    }
    for (;;) {
      this.skip();
      if (this.text.charAt(this.pos) !== '"') this.fail("expected a key");
      const key = this.string();
      this.skip();
      if (this.text.charAt(this.pos) !== ":") this.fail("expected ':'");
      this.pos++;
      setKey(out, key, this.value());
      this.skip();
      const sep = this.text.charAt(this.pos++);
      if (sep === "}") return out;
      if (sep !== ",") this.fail("expected ',' or '}'");
    }
  }

  array(): unknown[] {
    this.pos++;
    const out: unknown[] = [];
    this.skip();
    if (this.text.charAt(this.pos) === "]") {
      this.pos++;
      return out;
    }
    for (;;) {
      out.push(this.value());
      this.skip();
      const sep = this.text.charAt(this.pos++);
      if (sep === "]") return out;
      if (sep !== ",") this.fail("expected ',' or ']'");
    }
  }

  string(): string {
    const start = this.pos;
    const end = scanString(this.text, start);
    if (end < 0) this.fail("unterminated string");
    this.pos = end;
    return JSON.parse(this.text.slice(start, end)) as string;
  }

  number(): unknown {
    const m = NUMBER.exec(this.text.slice(this.pos, this.pos + 20000));
    if (m === null || m[0] === "") this.fail("unexpected character");
    const token = m[0];
    this.pos += token.length;
    if (/[.eE]/.test(token)) {
      const n = Number(token);
      return Number.isInteger(n) ? new Float(n) : n;
    }
    return mkInt(BigInt(token));
  }
}

const WORDS: [string, unknown][] = [
  ["true", true],
  ["false", false],
  ["null", null],
  ["NaN", NaN],
  ["Infinity", Infinity],
  ["-Infinity", -Infinity],
];
const NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?/;

function scanString(text: string, start: number): number {
  let i = start + 1;
  while (i < text.length) {
    const ch = text.charAt(i);
    if (ch === "\\") i += 2;
    else if (ch === '"') return i + 1;
    else i++;
  }
  return -1;
}

/** Parses JSON text into Python-faithful values (see values.ts). */
export function parseJSON(text: string): unknown {
  const r = new Reader(text);
  const v = r.value();
  r.skip();
  if (r.pos !== text.length) r.fail("extra data");
  return v;
}
