/**
 * The functions guards and actions may call (runtime/builtins.py names them; runtime/expr.py
 * implements them): the same results and the same faults.
 */
import { ExprFault, typeError } from "./faults.js";
import { compare } from "./operators.js";
import {
  codePoints, Float, isDict, isFloat, isInt, mkInt, pyStr, setKey, strLen, typeName,
  type Dict,
} from "./values.js";

export interface Builtin {
  readonly least: number;
  readonly most: number;
}

/** Every expression function and how many arguments it takes. */
export const BUILTINS: Readonly<Record<string, Builtin>> = {
  len: { least: 1, most: 1 },
  min: { least: 2, most: 99 },
  max: { least: 2, most: 99 },
  abs: { least: 1, most: 1 },
  round: { least: 1, most: 1 },
  merge: { least: 2, most: 2 },
  keys: { least: 1, most: 1 },
  values: { least: 1, most: 1 },
  lower: { least: 1, most: 1 },
  upper: { least: 1, most: 1 },
  trim: { least: 1, most: 1 },
  coalesce: { least: 2, most: 2 },
  str: { least: 1, most: 1 },
  active: { least: 1, most: 1 },
  event_name: { least: 0, most: 0 },
};

/** Quantifiers, each an expression op of its own (`any(x in xs: BODY)`). */
export const QUANTIFIERS: readonly string[] = ["any", "all", "count", "sum", "min", "max"];

function len(x: unknown): number {
  if (typeof x === "string") return strLen(x);
  if (Array.isArray(x)) return x.length;
  if (isDict(x)) return Object.keys(x).length;
  throw typeError(`object of type '${typeName(x)}' has no len()`);
}

/** The least (or greatest) of values, the first such, as Python's `min` / `max`. */
export function extreme(values: unknown[], which: "min" | "max"): unknown {
  let best = values[0];
  for (const v of values.slice(1)) {
    if (compare(which === "min" ? "<" : ">", v, best)) best = v;
  }
  return best;
}

function abs(x: unknown): unknown {
  if (typeof x === "boolean") return x ? 1 : 0;
  if (typeof x === "bigint") return mkInt(x < 0n ? -x : x);
  if (typeof x === "number") return Math.abs(x);
  if (x instanceof Float) return new Float(Math.abs(x.value));
  throw typeError(`bad operand type for abs(): '${typeName(x)}'`);
}

/** Half away from zero (Python's built-in rounds half to even; the language does not). */
function round(x: unknown): unknown {
  if (isInt(x) || typeof x === "boolean") {
    if (typeof x === "bigint" && !Number.isFinite(Number(x))) {
      throw new ExprFault("OverflowError: int too large to convert to float");
    }
    return typeof x === "boolean" ? (x ? 1 : 0) : x;
  }
  if (!isFloat(x)) throw typeError(`must be real number, not ${typeName(x)}`);
  const v = x instanceof Float ? x.value : x;
  if (!Number.isFinite(v)) throw new ExprFault(`cannot round ${Number.isNaN(v) ? "nan" : v > 0 ? "inf" : "-inf"}`);
  const magnitude = Math.abs(v);
  let whole = BigInt(Math.floor(magnitude));
  if (magnitude - Math.floor(magnitude) >= 0.5) whole += 1n;
  return mkInt(v >= 0 ? whole : -whole);
}

function mapping(x: unknown): Dict {
  if (isDict(x)) return x;
  throw typeError(`'${typeName(x)}' object is not a mapping`);
}

function merge(a: unknown, b: unknown): Dict {
  const out: Dict = {};
  for (const [k, v] of Object.entries(mapping(a))) setKey(out, k, v);
  for (const [k, v] of Object.entries(mapping(b))) setKey(out, k, v);
  return out;
}

function keys(x: unknown): unknown[] {
  if (isDict(x)) return Object.keys(x);
  if (Array.isArray(x)) return (x as unknown[]).slice();
  if (typeof x === "string") return codePoints(x);
  throw typeError(`'${typeName(x)}' object is not iterable`);
}

function values(x: unknown): unknown[] {
  if (isDict(x)) return Object.values(x);
  throw new ExprFault(`AttributeError: '${typeName(x)}' object has no attribute 'values'`);
}

function text(name: string, f: (s: string) => string): (x: unknown) => string {
  return (x) => {
    if (typeof x === "string") return f(x);
    throw typeError(`descriptor '${name}' for 'str' objects doesn't apply to a '${typeName(x)}' object`);
  };
}

// Python's `str.strip()` whitespace (`str.isspace`), which is not JavaScript's `trim` set.
const SPACE = "\\t\\n\\v\\f\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
const STRIP = new RegExp(`^[${SPACE}]+|[${SPACE}]+$`, "g");

/** Python's `str.strip()`. */
export function strip(s: string): string {
  return s.replace(STRIP, "");
}

/** The language's spelling of a value: `true`, `none`, floats as Python writes them. */
export function toStr(x: unknown): string {
  if (x === true) return "true";
  if (x === false) return "false";
  if (x === null || x === undefined) return "none";
  return pyStr(x);
}

/** The functions evaluated from their arguments' values (`coalesce`, `active`, `event_name`
 * are evaluated by the interpreter itself). */
export const FUNCTIONS: Readonly<Record<string, (...args: unknown[]) => unknown>> = {
  len,
  min: (...args) => extreme(args, "min"),
  max: (...args) => extreme(args, "max"),
  abs,
  round,
  merge,
  keys,
  values,
  lower: text("lower", (s) => s.toLowerCase()),
  upper: text("upper", (s) => s.toUpperCase()),
  trim: text("strip", strip),
  str: toStr,
};

