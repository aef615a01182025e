/**
 * The value model: how Python's values (the reference runtime's) are held in JavaScript.
 *
 * - `null` is Python's `None`; `boolean` is `bool`; `string` is `str`; arrays are lists and
 *   plain objects are dicts (string keys).
 * - An `int` is a JS `number` holding an integer within the safe range, or a `bigint` past it
 *   (Python's integers are unbounded; `Limits.max_int_digits` bounds them to 1,000 digits).
 * - A `float` is a JS `number` that is not an integer (3.5, NaN, Infinity), or a `Float` box
 *   when its value is integral (2.0): Python tells `2` from `2.0` (`str(4 / 2)` is "2.0",
 *   an index must be an `int`), so the box keeps the difference. `Float` has `valueOf` and
 *   `toJSON`, so host code may still use it as a number.
 *
 * `parseJSON` reads JSON text as Python's `json.loads` does (`2.0` is a float, `2` an int, big
 * integers stay exact); `JSON.parse` output is accepted too (its integral numbers are ints).
 */

export class Float {
  constructor(readonly value: number) {}
  valueOf(): number {
    return this.value;
  }
  toJSON(): number {
    return this.value;
  }
}

export type Py = unknown;
export type Dict = Record<string, unknown>;

/** A float from a JS number: boxed when integral, so that it stays a float. */
export function mkFloat(n: number): number | Float {
  return Number.isInteger(n) ? new Float(n) : n;
}

/** An int from a bigint: a plain number when it is safe. */
export function mkInt(n: bigint): number | bigint {
  return n >= -9007199254740991n && n <= 9007199254740991n ? Number(n) : n;
}

export function isInt(x: unknown): x is number | bigint {
  return typeof x === "bigint" || (typeof x === "number" && Number.isInteger(x));
}

export function isFloat(x: unknown): x is number | Float {
  return x instanceof Float || (typeof x === "number" && !Number.isInteger(x));
}

/** Whether `x` is a number to Python's arithmetic: an int, a float or a bool. */
export function isNumeric(x: unknown): x is number | bigint | Float | boolean {
  return typeof x === "number" || typeof x === "bigint" || typeof x === "boolean" || x instanceof Float;
}

export function isDict(x: unknown): x is Dict {
  return typeof x === "object" && x !== null && !Array.isArray(x) && !(x instanceof Float);
}

/** An int (or bool) as a bigint. */
export function toBig(x: number | bigint | boolean): bigint {
  return typeof x === "bigint" ? x : BigInt(typeof x === "boolean" ? (x ? 1 : 0) : x);
}

/** Sets `obj[key]` as an own property, even for `__proto__`. */
export function setKey(obj: Dict, key: string, value: unknown): void {
  if (key === "__proto__") {
    Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  } else {
    obj[key] = value;
  }
}

export function hasKey(obj: Dict, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(obj, key);
}

/** Python's type name of a value (`NoneType`, `int`, `dict`, ...), for fault messages. */
export function typeName(x: unknown): string {
  if (x === null || x === undefined) return "NoneType";
  if (typeof x === "boolean") return "bool";
  if (isInt(x)) return "int";
  if (isFloat(x)) return "float";
  if (typeof x === "string") return "str";
  if (Array.isArray(x)) return "list";
  return "dict";
}

/** Python's truth value. */
export function truthy(x: unknown): boolean {
  if (x === null || x === undefined || x === false) return false;
  if (x === true) return true;
  if (typeof x === "number") return x !== 0; // NaN is true, as in Python
  if (typeof x === "bigint") return x !== 0n;
  if (x instanceof Float) return x.value !== 0;
  if (typeof x === "string") return x.length > 0;
  if (Array.isArray(x)) return x.length > 0;
  return Object.keys(x).length > 0;
}

/** Characters (code points) in a string, as Python's `len` counts them. */
export function strLen(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length - 1; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n--;
      i++;
    }
  }
  return n;
}

/** The characters (code points) of a string, as Python sees them. */
export function codePoints(s: string): string[] {
  return Array.from(s);
}

/** The number of decimal-free bits of an int (Python's `int.bit_length`). */
export function bitLength(n: bigint): number {
  const a = n < 0n ? -n : n;
  return a === 0n ? 0 : a.toString(2).length;
}

/** `n` with thousands separators, as Python's `f"{n:,}"`. */
export function grouped(n: number | bigint): string {
  const s = (typeof n === "bigint" ? n : BigInt(n)).toString();
  const neg = s.startsWith("-");
  const digits = neg ? s.slice(1) : s;
  const out = digits.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  return neg ? "-" + out : out;
}

/** Python's `repr` of a float. */
export function floatRepr(x: number): string {
  if (Number.isNaN(x)) return "nan";
  if (!Number.isFinite(x)) return x > 0 ? "inf" : "-inf";
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
  const [mant = "", expText = "0"] = x.toExponential().split("e");
  const exp = Number(expText);
  const neg = mant.startsWith("-");
  const digits = mant.replace("-", "").replace(".", "");
  let body: string;
  if (exp >= -4 && exp < 16) {
    if (exp < 0) body = "0." + "0".repeat(-exp - 1) + digits;
    else if (digits.length <= exp + 1) body = digits + "0".repeat(exp + 1 - digits.length) + ".0";
    else body = digits.slice(0, exp + 1) + "." + digits.slice(exp + 1);
  } else {
    const m = digits.length > 1 ? digits.charAt(0) + "." + digits.slice(1) : digits;
    const e = Math.abs(exp);
    body = m + "e" + (exp < 0 ? "-" : "+") + (e < 10 ? "0" : "") + String(e);
  }
  return (neg ? "-" : "") + body;
}

/** The JS number of a numeric value (a bool is 0 or 1); a fault past the largest float. */
export function toFloat(x: number | bigint | Float | boolean): number {
  if (typeof x === "bigint") {
    const n = Number(x);
    if (!Number.isFinite(n)) throw new OverflowFault("int too large to convert to float");
    return n;
  }
  if (typeof x === "boolean") return x ? 1 : 0;
  return typeof x === "number" ? x : x.value;
}

/** Python's `OverflowError` (worded by `describeFault` as Python words it). */
export class OverflowFault extends Error {}

function isPrintable(cp: number): boolean {
  const ch = String.fromCodePoint(cp);
  if (cp === 0x20) return true;
  return !/[\p{C}\p{Z}]/u.test(ch);
}

/** Python's `repr` of a string. */
export function strRepr(s: string): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = quote;
  for (let i = 0; i < s.length; ) {
    const cp = s.codePointAt(i) ?? 0;
    i += cp > 0xffff ? 2 : 1;
    const ch = String.fromCodePoint(cp);
    if (ch === quote || ch === "\\") out += "\\" + ch;
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (cp < 0x20 || cp === 0x7f) out += "\\x" + cp.toString(16).padStart(2, "0");
    else if (cp < 0x7f || isPrintable(cp)) out += ch;
    else if (cp <= 0xff) out += "\\x" + cp.toString(16).padStart(2, "0");
    else if (cp <= 0xffff) out += "\\u" + cp.toString(16).padStart(4, "0");
    else out += "\\U" + cp.toString(16).padStart(8, "0");
  }
  return out + quote;
}

/** Python's `repr` of a value. */
export function repr(x: unknown): string {
  if (x === null || x === undefined) return "None";
  if (x === true) return "True";
  if (x === false) return "False";
  if (typeof x === "bigint") return x.toString();
  if (typeof x === "number") return Number.isInteger(x) ? String(x) : floatRepr(x);
  if (x instanceof Float) return floatRepr(x.value);
  if (typeof x === "string") return strRepr(x);
  if (Array.isArray(x)) return "[" + x.map(repr).join(", ") + "]";
  const parts = Object.entries(x as Dict).map(([k, v]) => strRepr(k) + ": " + repr(v));
  return "{" + parts.join(", ") + "}";
}

/** Python's `str` of a value. */
export function pyStr(x: unknown): string {
  return typeof x === "string" ? x : repr(x);
}

/** A JSON string as Python's `json.dumps` writes it: with `ensure_ascii=False` only quotes,
 * backslashes and control characters are escaped; with `ascii`, everything past U+007E too
 * (UTF-16 units: surrogate pairs as two escapes). */
export function jsonString(s: string, ascii = false): string {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const ch = s.charAt(i);
    if (ch === '"') out += '\\"';
    else if (ch === "\\") out += "\\\\";
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (ch === "\b") out += "\\b";
    else if (ch === "\f") out += "\\f";
    else if (c < 0x20 || (ascii && c > 0x7e)) out += "\\u" + c.toString(16).padStart(4, "0");
    else out += ch;
  }
  return out + '"';
}

/** Python's `json.dumps(x, ensure_ascii=False)` (default separators). */
export function dumps(x: unknown): string {
  if (x === null || x === undefined) return "null";
  if (x === true) return "true";
  if (x === false) return "false";
  if (typeof x === "bigint") return x.toString();
  if (typeof x === "number" || x instanceof Float) {
    const n = toFloat(x);
    if (Number.isNaN(n)) return "NaN";
    if (!Number.isFinite(n)) return n > 0 ? "Infinity" : "-Infinity";
    return isInt(x) ? String(n) : floatRepr(n);
  }
  if (typeof x === "string") return jsonString(x);
  if (Array.isArray(x)) return "[" + x.map(dumps).join(", ") + "]";
  const parts = Object.entries(x as Dict).map(([k, v]) => jsonString(k) + ": " + dumps(v));
  return "{" + parts.join(", ") + "}";
}

/** Plain JSON data (numbers for ints and floats alike), as `JSON.stringify` takes. */
export function toPlain(x: unknown): unknown {
  if (typeof x === "bigint") return Number(x);
  if (x instanceof Float) return x.value;
  if (Array.isArray(x)) return x.map(toPlain);
  if (isDict(x)) {
    const out: Dict = {};
    for (const [k, v] of Object.entries(x)) setKey(out, k, toPlain(v));
    return out;
  }
  return x;
}

/** Python values from `JSON.parse` output: integral numbers are ints, the others floats. */
export function fromPlain(x: unknown): unknown {
  if (Array.isArray(x)) return x.map(fromPlain);
  if (isDict(x)) {
    const out: Dict = {};
    for (const [k, v] of Object.entries(x)) setKey(out, k, fromPlain(v));
    return out;
  }
  return x;
}

