/**
 * Bounds on the work a step may do and the values it may keep (runtime/limits.py): the same
 * defaults, the same checks and the same words.
 */
import { bitLength, Float, grouped, isDict, strLen, toBig, typeName } from "./values.js";

/** A value or a computation past one of the machine's `Limits`; `detail` words it. */
export class LimitExceeded extends Error {
  constructor(readonly detail: string) {
    super(detail);
    this.name = "LimitExceeded";
  }
}

export interface LimitValues {
  maxString: number;
  maxItems: number;
  maxIntDigits: number;
  maxValueSize: number;
  maxDepth: number;
  maxTemplateOutput: number;
  maxTemplateSteps: number;
  maxIssues: number;
  maxArgument: number;
  maxMicrosteps: number;
  maxLoopIterations: number;
  maxOutputs: number;
  maxOutputSize: number;
}

export const DEFAULT_LIMIT_VALUES: Readonly<LimitValues> = Object.freeze({
  maxString: 1_000_000,
  maxItems: 100_000,
  maxIntDigits: 1_000,
  maxValueSize: 4_000_000,
  maxDepth: 64,
  maxTemplateOutput: 1_000_000,
  maxTemplateSteps: 100_000,
  maxIssues: 100,
  maxArgument: 10_000,
  maxMicrosteps: 100,
  maxLoopIterations: 100_000,
  maxOutputs: 1_000,
  maxOutputSize: 10_000_000,
});

const ASCII = /^[\x01-\x7f]*$/;

/** Why text `s` cannot be stored (a NUL, a lone surrogate), or null. */
export function textProblem(s: string): string | null {
  if (ASCII.test(s)) return null;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0) return "the string contains a NUL character";
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = s.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        i++;
        continue;
      }
      return `the string contains a lone surrogate (U+${c.toString(16).toUpperCase()})`;
    }
    if (c >= 0xdc00 && c <= 0xdfff) {
      return `the string contains a lone surrogate (U+${c.toString(16).toUpperCase()})`;
    }
  }
  return null;
}

/** `text` with its NUL characters and lone surrogates written as escapes. */
export function storable(text: string): string {
  if (textProblem(text) === null) return text;
  let out = "";
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const pair = c >= 0xd800 && c <= 0xdbff && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00;
    if (pair) {
      out += text.slice(i, i + 2);
      i++;
    } else if (c === 0) out += "\\x00";
    else if (c >= 0xd800 && c <= 0xdfff) out += "\\u" + c.toString(16);
    else out += text.charAt(i);
  }
  return out;
}

export class Limits implements LimitValues {
  readonly maxString: number;
  readonly maxItems: number;
  readonly maxIntDigits: number;
  readonly maxValueSize: number;
  readonly maxDepth: number;
  readonly maxTemplateOutput: number;
  readonly maxTemplateSteps: number;
  readonly maxIssues: number;
  readonly maxArgument: number;
  readonly maxMicrosteps: number;
  readonly maxLoopIterations: number;
  readonly maxOutputs: number;
  readonly maxOutputSize: number;
  /** The largest magnitude an integer may have, and its bit length. */
  readonly intMax: bigint;
  readonly intBits: number;

  constructor(given: Partial<LimitValues> = {}) {
    const v = { ...DEFAULT_LIMIT_VALUES, ...given };
    if (!(v.maxIntDigits >= 1 && v.maxIntDigits <= 4300)) {
      throw new RangeError("max_int_digits must be from 1 to 4300");
    }
    for (const [name, n] of Object.entries(v)) {
      if (!Number.isInteger(n) || n < 1) {
        throw new RangeError(`${snake(name)} must be a positive integer, got ${String(n)}`);
      }
    }
    this.maxString = v.maxString;
    this.maxItems = v.maxItems;
    this.maxIntDigits = v.maxIntDigits;
    this.maxValueSize = v.maxValueSize;
    this.maxDepth = v.maxDepth;
    this.maxTemplateOutput = v.maxTemplateOutput;
    this.maxTemplateSteps = v.maxTemplateSteps;
    this.maxIssues = v.maxIssues;
    this.maxArgument = v.maxArgument;
    this.maxMicrosteps = v.maxMicrosteps;
    this.maxLoopIterations = v.maxLoopIterations;
    this.maxOutputs = v.maxOutputs;
    this.maxOutputSize = v.maxOutputSize;
    this.intMax = 10n ** BigInt(v.maxIntDigits) - 1n;
    this.intBits = bitLength(this.intMax);
  }

  stringProblem(s: string): string | null {
    const n = s.length > this.maxString ? strLen(s) : 0;
    if (n > this.maxString) {
      return `the string has ${grouped(n)} characters; at most ${grouped(this.maxString)} are allowed`;
    }
    return textProblem(s);
  }

  intProblem(n: number | bigint): string | null {
    if (typeof n === "number" && (this.maxIntDigits >= 16 || !Number.isInteger(n))) return null;
    const big = typeof n === "number" ? BigInt(n) : n;
    if (big >= -this.intMax && big <= this.intMax) return null;
    return `the integer has more than ${grouped(this.maxIntDigits)} digits`;
  }

  itemsProblem(n: number): string | null {
    if (n <= this.maxItems) return null;
    return `${grouped(n)} items; at most ${grouped(this.maxItems)} are allowed`;
  }

  /** `value` itself when an action may store it; throws `LimitExceeded` otherwise. */
  checkComputed<T>(value: T): T {
    measure(this, value, 0, { left: this.maxValueSize });
    return value;
  }

  /** The size of a payload, which a step's outputs may still grow by `room`. */
  outputSize(value: unknown, room: number): number {
    const budget = { left: room };
    try {
      measure(this, value, 0, budget);
    } catch (e) {
      if (!(e instanceof LimitExceeded) || budget.left >= 0) throw e;
      throw new LimitExceeded(
        `the step's effects and raised events are larger than ${grouped(this.maxOutputSize)} ` +
          "(characters plus items; Limits.max_output_size)",
      );
    }
    return room - budget.left;
  }

  checkInt<T>(n: T): T {
    if ((typeof n === "bigint" || typeof n === "number") && this.intProblem(n) !== null) {
      throw new LimitExceeded(`the integer has more than ${grouped(this.maxIntDigits)} digits`);
    }
    return n;
  }

  checkStr<T>(s: T): T {
    if (typeof s === "string") {
      const problem = this.stringProblem(s);
      if (problem !== null) throw new LimitExceeded(problem);
    }
    return s;
  }

  /** Refuses `a * b` before it is computed when the result would be past the limits. */
  checkProduct(a: unknown, b: unknown): void {
    const intA = typeof a === "number" || typeof a === "bigint" || typeof a === "boolean";
    const intB = typeof b === "number" || typeof b === "bigint" || typeof b === "boolean";
    if (isIntLike(a) && isIntLike(b)) {
      if (bitLength(toBig(a)) + bitLength(toBig(b)) > this.intBits + 1) {
        throw new LimitExceeded(`the product has more than ${grouped(this.maxIntDigits)} digits`);
      }
    } else if (isIntLike(b) && intB && (typeof a === "string" || Array.isArray(a))) {
      this.repeat(a, b);
    } else if (isIntLike(a) && intA && (typeof b === "string" || Array.isArray(b))) {
      this.repeat(b, a);
    }
  }

  private repeat(seq: string | unknown[], n: number | bigint | boolean): void {
    const times = toBig(n) > 0n ? toBig(n) : 0n;
    const len = typeof seq === "string" ? strLen(seq) : seq.length;
    const size = BigInt(len) * times;
    const text = typeof seq === "string";
    const bound = text ? this.maxString : this.maxItems;
    if (size > BigInt(bound)) {
      const what = text ? "characters" : "items";
      throw new LimitExceeded(
        `repeating it would make ${grouped(size)} ${what}; at most ${grouped(bound)}`,
      );
    }
  }
}

function isIntLike(x: unknown): x is number | bigint | boolean {
  return typeName(x) === "int" || typeof x === "boolean";
}

function snake(name: string): string {
  return name.replace(/[A-Z]/g, (c) => "_" + c.toLowerCase());
}

export const DEFAULT_LIMITS = new Limits();

function tooLarge(limits: Limits): never {
  throw new LimitExceeded(
    `the value is larger than ${grouped(limits.maxValueSize)} (characters plus items)`,
  );
}

function measure(limits: Limits, value: unknown, depth: number, budget: { left: number }): void {
  if (typeof value === "string") {
    const problem = limits.stringProblem(value);
    if (problem !== null) throw new LimitExceeded(problem);
    budget.left -= strLen(value);
  } else if (typeof value === "bigint" || typeof value === "number") {
    limits.checkInt(value);
  } else if (Array.isArray(value) || (isDict(value) && !(value instanceof Float))) {
    if (depth >= limits.maxDepth) {
      throw new LimitExceeded(`the value is nested more than ${String(limits.maxDepth)} levels deep`);
    }
    const entries = Array.isArray(value) ? null : Object.entries(value);
    const n = entries === null ? (value as unknown[]).length : entries.length;
    const problem = limits.itemsProblem(n);
    if (problem !== null) throw new LimitExceeded(`the value has ${problem}`);
    budget.left -= n;
    const items = entries === null ? (value as unknown[]) : entries.flat();
    for (const item of items) {
      measure(limits, item, depth + 1, budget);
      if (budget.left < 0) tooLarge(limits);
    }
  }
  if (budget.left < 0) tooLarge(limits);
}

