/**
 * The binary and unary operators of the expression language, with Python's semantics
 * (runtime/operators.py): ints and floats, strings and lists, and the faults Python raises.
 */
import { divisionByZero, ExprFault, typeError } from "./faults.js";
import type { Limits } from "./limits.js";
import {
  bitLength, Float, hasKey, isDict, isFloat, isInt, isNumeric, mkFloat, mkInt, OverflowFault, toBig,
  toFloat, typeName,
} from "./values.js";

type Num = number | bigint | Float | boolean;

function intLike(x: unknown): x is number | bigint | boolean {
  return isInt(x) || typeof x === "boolean";
}

function unsupported(sym: string, a: unknown, b: unknown): ExprFault {
  return typeError(`unsupported operand type(s) for ${sym}: '${typeName(a)}' and '${typeName(b)}'`);
}

function overflow(): never {
  throw new ExprFault("OverflowError: int too large to convert to float");
}

function floatOf(x: Num): number {
  try {
    return toFloat(x);
  } catch (e) {
    if (e instanceof OverflowFault) overflow();
    throw e;
  }
}

/** Integer arithmetic, exact: plain numbers while they stay safe. */
function intOp(a: number | bigint | boolean, b: number | bigint | boolean, op: string): unknown {
  if (typeof a === "number" && typeof b === "number") {
    const r = op === "+" ? a + b : op === "-" ? a - b : a * b;
    if (Number.isSafeInteger(r)) return r === 0 ? 0 : r;
  }
  const x = toBig(a);
  const y = toBig(b);
  return mkInt(op === "+" ? x + y : op === "-" ? x - y : x * y);
}

function numeric(sym: string, a: unknown, b: unknown, f: (x: number, y: number) => number): unknown {
  if (!isNumeric(a) || !isNumeric(b)) throw unsupported(sym, a, b);
  if (intLike(a) && intLike(b)) return intOp(a, b, sym);
  return mkFloat(f(floatOf(a), floatOf(b)));
}

export function add(a: unknown, b: unknown): unknown {
  if (typeof a === "string") {
    if (typeof b === "string") return a + b;
    throw typeError(`can only concatenate str (not "${typeName(b)}") to str`);
  }
  if (Array.isArray(a)) {
    if (Array.isArray(b)) return (a as unknown[]).concat(b as unknown[]);
    throw typeError(`can only concatenate list (not "${typeName(b)}") to list`);
  }
  return numeric("+", a, b, (x, y) => x + y);
}

export function sub(a: unknown, b: unknown): unknown {
  return numeric("-", a, b, (x, y) => x - y);
}

function repeat(seq: string | unknown[], n: number | bigint | boolean): unknown {
  const big = toBig(n);
  if (big > 9223372036854775807n || big < -9223372036854775808n) {
    throw new ExprFault("OverflowError: cannot fit 'int' into an index-sized integer");
  }
  const times = seq.length === 0 ? 0 : Number(big > 0n ? big : 0n);
  if (typeof seq === "string") return seq.repeat(times);
  const out: unknown[] = [];
  for (let i = 0; i < times; i++) out.push(...seq);
  return out;
}

/** `a * b`, refused before it is computed when past the limits (`Limits.mul`). */
export function mul(a: unknown, b: unknown, limits: Limits): unknown {
  limits.checkProduct(a, b);
  const seqA = typeof a === "string" || Array.isArray(a);
  const seqB = typeof b === "string" || Array.isArray(b);
  if (seqA || seqB) {
    if (seqA && intLike(b)) return repeat(a, b);
    if (seqB && intLike(a)) return repeat(b, a);
    const other = seqA ? b : a;
    if (seqA !== seqB && (isFloat(other) || typeof other === "string" || Array.isArray(other) || isDict(other))) {
      throw typeError(`can't multiply sequence by non-int of type '${typeName(other)}'`);
    }
    if (seqA && seqB) throw typeError(`can't multiply sequence by non-int of type '${typeName(b)}'`);
    throw unsupported("*", a, b);
  }
  return numeric("*", a, b, (x, y) => x * y);
}

export function div(a: unknown, b: unknown): unknown {
  if (!isNumeric(a) || !isNumeric(b)) throw unsupported("/", a, b);
  if (intLike(a) && intLike(b)) {
    const y = toBig(b);
    if (y === 0n) throw divisionByZero();
    return mkFloat(bigDiv(toBig(a), y));
  }
  const y = floatOf(b);
  if (y === 0) throw new ExprFault("division by zero");
  return mkFloat(floatOf(a) / y);
}

/** `x / y` correctly rounded, as Python divides ints (`Number` of a bigint rounds correctly;
 * a sticky bit keeps the rounding of the quotient's tail). */
function bigDiv(x: bigint, y: bigint): number {
  const nx = Number(x);
  const ny = Number(y);
  if (Number.isSafeInteger(nx) && Number.isSafeInteger(ny)) return nx / ny;
  const negative = x < 0n !== y < 0n;
  const a = x < 0n ? -x : x;
  const b = y < 0n ? -y : y;
  const k = Math.max(0, 65 + bitLength(b) - bitLength(a));
  const scaled = a << BigInt(k);
  let q = scaled / b;
  if (scaled % b !== 0n) q |= 1n;
  let r = Number(q);
  if (!Number.isFinite(r)) throw new ExprFault("OverflowError: integer division result too large for a float");
  for (let left = k; left > 0; left -= 1000) r *= 2 ** -Math.min(left, 1000);
  return negative ? -r : r;
}

export function mod(a: unknown, b: unknown): unknown {
  if (typeof a === "string") return formatted(a, b);
  if (!isNumeric(a) || !isNumeric(b)) throw unsupported("%", a, b);
  if (intLike(a) && intLike(b)) {
    const x = toBig(a);
    const y = toBig(b);
    if (y === 0n) throw divisionByZero();
    const r = x % y;
    return mkInt(r !== 0n && r < 0n !== y < 0n ? r + y : r);
  }
  const x = floatOf(a);
  const y = floatOf(b);
  if (y === 0) throw new ExprFault("division by zero");
  let r = x % y;
  if (r !== 0) {
    if (y < 0 !== r < 0) r += y;
  } else {
    r = y < 0 ? -0 : 0;
  }
  return mkFloat(r);
}

/** `str % value`: Python's printf formatting. A text without `%` is given back when the value
 * is a list or a map (taken as the mapping of named specifiers); anything else has arguments
 * left over. Texts with specifiers are not formatted (a fault): the compiler refuses `%` on
 * strings, so no flow reaches this. */
function formatted(text: string, value: unknown): string {
  if (text.includes("%")) throw new ExprFault("TypeError: printf-style formatting is not supported");
  if (Array.isArray(value) || isDict(value)) return text;
  throw new ExprFault("TypeError: not all arguments converted during string formatting");
}

export function neg(a: unknown): unknown {
  if (typeof a === "boolean") return a ? -1 : 0;
  if (typeof a === "bigint") return mkInt(-a);
  if (typeof a === "number") return Number.isInteger(a) ? (a === 0 ? 0 : -a) : -a;
  if (a instanceof Float) return new Float(-a.value);
  throw typeError(`bad operand type for unary -: '${typeName(a)}'`);
}

// ---- equality and order ---------------------------------------------------------------------

/** Python's `==`. */
export function eq(a: unknown, b: unknown): boolean {
  if (isNumeric(a) && isNumeric(b)) return numEq(a, b);
  if (a === null || b === null || a === undefined || b === undefined) return a == b;
  if (typeof a === "string" || typeof b === "string") return a === b;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((x, i) => x === b[i] || eq(x, b[i]));
  }
  if (isDict(a) && isDict(b)) {
    const ka = Object.keys(a);
    if (ka.length !== Object.keys(b).length) return false;
    return ka.every((k) => hasKey(b, k) && (a[k] === b[k] || eq(a[k], b[k])));
  }
  return false;
}

function numEq(a: Num, b: Num): boolean {
  const x = typeof a === "boolean" ? (a ? 1 : 0) : a instanceof Float ? a.value : a;
  const y = typeof b === "boolean" ? (b ? 1 : 0) : b instanceof Float ? b.value : b;
  // JavaScript's == compares a bigint and a number exactly, as Python compares int and float.
  return x == y;
}

function numCmp(a: Num, b: Num): number {
  const x = typeof a === "boolean" ? (a ? 1 : 0) : a instanceof Float ? a.value : a;
  const y = typeof b === "boolean" ? (b ? 1 : 0) : b instanceof Float ? b.value : b;
  return x < y ? -1 : x > y ? 1 : x == y ? 0 : NaN;
}

/** Orders strings by code point, as Python does (JavaScript orders UTF-16 units). */
export function strCmp(a: string, b: string): number {
  if (a === b) return 0;
  const xs = a[Symbol.iterator]();
  const ys = b[Symbol.iterator]();
  for (;;) {
    const x = xs.next();
    const y = ys.next();
    if (x.done === true) return y.done === true ? 0 : -1;
    if (y.done === true) return 1;
    const cx = x.value.codePointAt(0) ?? 0;
    const cy = y.value.codePointAt(0) ?? 0;
    if (cx !== cy) return cx < cy ? -1 : 1;
  }
}

/** `a SYM b` for an order operator: Python's rules (numbers, strings, lists), else a fault. */
export function compare(sym: "<" | "<=" | ">" | ">=", a: unknown, b: unknown): boolean {
  const c = order(sym, a, b);
  if (Number.isNaN(c)) return false;
  if (sym === "<") return c < 0;
  if (sym === "<=") return c <= 0;
  if (sym === ">") return c > 0;
  return c >= 0;
}

function order(sym: string, a: unknown, b: unknown): number {
  if (isNumeric(a) && isNumeric(b)) return numCmp(a, b);
  if (typeof a === "string" && typeof b === "string") return strCmp(a, b);
  if (Array.isArray(a) && Array.isArray(b)) {
    const n = Math.min(a.length, b.length);
    for (let i = 0; i < n; i++) {
      if (!eq(a[i], b[i])) {
        // The first items that differ decide, by the operator itself.
        return compare(sym as "<", a[i], b[i]) ? (sym.startsWith("<") ? -1 : 1) : sym.startsWith("<") ? 1 : -1;
      }
    }
    return a.length - b.length;
  }
  throw typeError(`'${sym}' not supported between instances of '${typeName(a)}' and '${typeName(b)}'`);
}

/** Python's `item in container`. */
export function contains(item: unknown, container: unknown): boolean {
  if (typeof container === "string") {
    if (typeof item !== "string") {
      throw typeError(`'in <string>' requires string as left operand, not ${typeName(item)}`);
    }
    return container.includes(item);
  }
  if (Array.isArray(container)) return container.some((x) => x === item || eq(x, item));
  if (isDict(container)) {
    if (Array.isArray(item) || isDict(item)) throw typeError(`unhashable type: '${typeName(item)}'`);
    return typeof item === "string" && hasKey(container, item);
  }
  throw typeError(`argument of type '${typeName(container)}' is not iterable`);
}

/** The evaluated binary operators by IR op (`and`, `or` are not: they short-circuit). */
export const BINARY: Readonly<Record<string, (a: unknown, b: unknown, limits: Limits) => unknown>> = {
  "==": (a, b) => eq(a, b),
  "!=": (a, b) => !eq(a, b),
  "<": (a, b) => compare("<", a, b),
  "<=": (a, b) => compare("<=", a, b),
  ">": (a, b) => compare(">", a, b),
  ">=": (a, b) => compare(">=", a, b),
  in: (a, b) => contains(a, b),
  "not in": (a, b) => !contains(a, b),
  "+": add,
  "-": sub,
  "*": mul,
  "/": div,
  "%": mod,
};
