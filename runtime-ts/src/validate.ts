/**
 * Payload and context checking with field-level feedback (runtime/validate.py `report`,
 * `feedback`; runtime/instance.py `_feedback`): the same issues, paths, words and order.
 *
 *   {"result": "validation_failed",
 *    "issues": {"invalid": [{field, provided, problem, requirement}],
 *               "missing": [{field, requirement}], "unknown": [field, ...]},
 *    "issue_count": N, ["issues_left_out": M,] "action": "..."}
 */
import { DEFAULT_LIMITS, type Limits, storable } from "./limits.js";
import { fieldsType, Invalid, type Field, type Type } from "./types.js";
import {
  bitLength, codePoints, Float, floatRepr, grouped, hasKey, isDict, isFloat, isInt, repr, setKey, toBig,
  type Dict,
} from "./values.js";

export { Invalid } from "./types.js";

/** `Invalid` with the feedback of the refusal it makes (`invalid_payload`, `invalid_context`). */
export class InvalidWithFeedback extends Invalid {
  constructor(readonly feedback: Dict) {
    super();
  }
}

/** What `report` found: at most `cap` issues kept, `count` counts them all. */
export class Issues {
  invalid: Dict[] = [];
  missing: Dict[] = [];
  unknown: string[] = [];
  count = 0;
  constructor(readonly cap: number = DEFAULT_LIMITS.maxIssues) {}

  get leftOut(): number {
    return this.count - this.invalid.length - this.missing.length - this.unknown.length;
  }
  private room(): boolean {
    this.count += 1;
    return this.count <= this.cap;
  }
  addInvalid(issue: Dict): void {
    if (this.room()) this.invalid.push(issue);
  }
  addMissing(field: string, requirement: string): void {
    if (this.room()) this.missing.push({ field, requirement });
  }
  addUnknown(field: string): void {
    if (this.room()) this.unknown.push(field);
  }
}

function isContainer(x: unknown): x is unknown[] | Dict {
  return Array.isArray(x) || isDict(x);
}

function size(x: unknown[] | Dict): number {
  return Array.isArray(x) ? x.length : Object.keys(x).length;
}

/** Everything wrong with `value` as a `t`, with dotted field paths; bounded. */
export function report(t: Type, value: unknown, path = "", issues?: Issues, limits: Limits = DEFAULT_LIMITS, depth = 0): Issues {
  const found = issues ?? new Issues(limits.maxIssues);
  const kind = t.kind;
  if ((kind === "record" || kind === "list" || kind === "map") && isContainer(value)) {
    if (depth >= limits.maxDepth) {
      addInvalid(found, path, value, t, `the value is nested more than ${String(limits.maxDepth)} levels deep`);
      return found;
    }
    if (size(value) > limits.maxItems) {
      addInvalid(found, path, value, t, `${grouped(size(value))} items; at most ${grouped(limits.maxItems)}`);
      return found;
    }
  }
  if (kind === "record") reportRecord(t, value, path, found, limits, depth);
  else if (kind === "optional" && t.item) reportOptional(t, t.item, value, path, found, limits, depth);
  else if (kind === "list" && t.item) {
    if (!Array.isArray(value)) addInvalid(found, path, value, t, `expected a list, got ${jsonKind(value)}`);
    else value.forEach((v, i) => report(t.item as Type, v, `${path}[${String(i)}]`, found, limits, depth + 1));
  } else if (kind === "map" && t.item) reportMap(t, t.item, value, path, found, limits, depth);
  else if (!passes(t, value)) addInvalid(found, path, value, t, problem(t, value, limits));
  return found;
}

function passes(t: Type, value: unknown): boolean {
  try {
    t.check(value);
    return true;
  } catch (e) {
    if (e instanceof Invalid) return false;
    throw e;
  }
}

function reportRecord(t: Type, value: unknown, path: string, found: Issues, limits: Limits, depth: number): void {
  if (!isDict(value)) {
    addInvalid(found, path, value, t, `expected an object, got ${jsonKind(value)}`);
    return;
  }
  const known = new Set(t.fields.map((f) => f.name));
  for (const f of t.fields) {
    const sub = path ? `${path}.${f.name}` : f.name;
    if (hasKey(value, f.name)) report(f.type, value[f.name], sub, found, limits, depth + 1);
    else if (f.required) found.addMissing(sub, f.type.requirement());
  }
  for (const k of Object.keys(value)) {
    if (!known.has(k)) {
      const name = keyText(k);
      found.addUnknown(path ? `${path}.${name}` : name);
    }
  }
}

function reportOptional(t: Type, item: Type, value: unknown, path: string, found: Issues, limits: Limits, depth: number): void {
  if (value === null) return;
  if (["record", "list", "map", "optional"].includes(item.kind)) {
    report(item, value, path, found, limits, depth);
  } else if (!passes(item, value)) {
    addInvalid(found, path, value, t, problem(item, value, limits));
  }
}

function reportMap(t: Type, item: Type, value: unknown, path: string, found: Issues, limits: Limits, depth: number): void {
  if (!isDict(value)) {
    addInvalid(found, path, value, t, `expected an object, got ${jsonKind(value)}`);
    return;
  }
  for (const [k, v] of Object.entries(value)) {
    const keyProblem = limits.stringProblem(k);
    if (keyProblem !== null) {
      addInvalid(found, path, value, t, `a key is not allowed: ${keyProblem}`);
      continue;
    }
    report(item, v, `${path}["${k}"]`, found, limits, depth + 1);
  }
}

function addInvalid(found: Issues, path: string, value: unknown, t: Type, problemText: string): void {
  found.addInvalid({ field: path || "(payload)", provided: shown(value), problem: problemText, requirement: t.requirement() });
}

function short(text: string): string {
  const chars = codePoints(text);
  return chars.length <= 200 ? text : chars.slice(0, 200).join("") + `... (${grouped(chars.length)} characters)`;
}

function keyText(k: string): string {
  return storable(short(k));
}

/** `value` as a rejection may show it: small, storable JSON, or a description of it. */
export function shown(value: unknown, depth = 0): unknown {
  if (value === null || typeof value === "boolean") return value;
  if (isInt(value)) {
    const n = toBig(value);
    if (n > -(10n ** 30n) && n < 10n ** 30n) return value;
    return `(an integer of about ${grouped(Math.floor(bitLength(n) * 0.30103) + 1)} digits)`;
  }
  if (isFloat(value)) return Number.isFinite(value.valueOf()) ? value : floatRepr(value.valueOf());
  if (typeof value === "string") return storable(short(value));
  if (Array.isArray(value) || isDict(value)) {
    const n = size(value);
    if (depth < 3 && n <= 20) {
      if (Array.isArray(value)) return value.map((v) => shown(v, depth + 1));
      const out: Dict = {};
      for (const [k, v] of Object.entries(value)) setKey(out, keyText(k), shown(v, depth + 1));
      return out;
    }
    return `(${Array.isArray(value) ? "a list of" : "an object of"} ${grouped(n)} items)`;
  }
  return `(a ${typeof value})`;
}

function jsonKind(value: unknown): string {
  if (value === null) return "null";
  if (typeof value === "boolean") return "a boolean";
  if (isInt(value)) return "an integer";
  if (isFloat(value)) return "a number";
  if (typeof value === "string") return "a string";
  if (Array.isArray(value)) return "a list";
  if (isDict(value)) return "an object";
  return `a ${typeof value}`;
}

function showBound(v: number): string {
  return Number.isInteger(v) ? String(v) : floatRepr(v);
}

function numberProblem(t: Type, value: unknown, limits: Limits): string | null {
  const kind = t.kind;
  if (typeof value === "boolean" || !(isInt(value) || isFloat(value))) {
    return `expected ${kind === "int" ? "an integer" : "a number"}, got ${jsonKind(value)}`;
  }
  if (typeof value === "bigint" && kind === "float" && !Number.isFinite(Number(value))) return "the number is too large";
  const n = value instanceof Float ? value.value : value;
  if (kind === "int" && typeof value === "number" && !Number.isInteger(value)) {
    return `${repr(value)} is not a whole number`;
  }
  if (typeof n === "number" && !Number.isFinite(n)) return `${floatRepr(n)} is not a finite number`;
  if (isInt(value) && limits.intProblem(value) !== null) return limits.intProblem(value);
  if (t.min !== null && n < t.min) return `${repr(value)} is below the minimum ${showBound(t.min)}`;
  if (t.max !== null && n > t.max) return `${repr(value)} is above the maximum ${showBound(t.max)}`;
  return null;
}

function problem(t: Type, value: unknown, limits: Limits): string {
  const kind = t.kind;
  const got = jsonKind(value);
  if (kind === "json") return jsonProblem(value, limits);
  if (kind === "str" && typeof value === "string") {
    return limits.stringProblem(value) ?? `expected ${t.requirement()}, got ${got}`;
  }
  if (kind === "enum") {
    if (typeof value === "string") return `${repr(shown(value))} is not one of the allowed values`;
    return `expected a string, got ${got}`;
  }
  if (kind === "int" || kind === "float") {
    const found = numberProblem(t, value, limits);
    if (found !== null) return found;
  }
  return `expected ${t.requirement()}, got ${got}`;
}

function jsonProblem(value: unknown, limits: Limits): string {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length) {
    const [x, depth] = stack.pop() as [unknown, number];
    if (isFloat(x) && !Number.isFinite(x.valueOf())) return `${floatRepr(x.valueOf())} is not a finite number`;
    if (typeof x === "string" && limits.stringProblem(x) !== null) return limits.stringProblem(x) ?? "";
    if (isInt(x) && limits.intProblem(x) !== null) return limits.intProblem(x) ?? "";
    if (Array.isArray(x) || isDict(x)) {
      if (depth >= limits.maxDepth) return `the value is nested more than ${String(limits.maxDepth)} levels deep`;
      if (size(x) > limits.maxItems) return `${grouped(size(x))} items; at most ${grouped(limits.maxItems)}`;
      if (Array.isArray(x)) stack.push(...x.map((v): [unknown, number] => [v, depth + 1]));
      else {
        stack.push(...Object.values(x).map((v): [unknown, number] => [v, depth + 1]));
        stack.push(...Object.keys(x).map((k): [unknown, number] => [k, depth + 1]));
      }
    } else if (!(x === null || typeof x === "boolean" || isInt(x) || isFloat(x) || typeof x === "string")) {
      return `expected a JSON value, got a ${typeof x}`;
    }
  }
  return `the value is larger than ${grouped(limits.maxValueSize)} (characters plus items)`;
}

/** The seed-003 feedback object, keys in the seed's order. */
export function feedback(issues: Issues, action: string): Dict {
  const out: Dict = {
    result: "validation_failed",
    issues: { invalid: issues.invalid, missing: issues.missing, unknown: issues.unknown },
    issue_count: issues.count,
  };
  if (issues.leftOut) out.issues_left_out = issues.leftOut;
  out.action = action;
  return out;
}

export interface CheckOptions {
  /** The event's name (its refusal's action says "Send EVENT again ..."). */
  event?: string;
  limits?: Limits;
}

/** A payload checked against an event's fields, normalised (defaults filled in); throws
 * `InvalidWithFeedback` (an `Invalid`) with the `invalid_payload` refusal's data. */
export function checkPayload(fields: readonly Field[] | Type, payload: unknown, opts: CheckOptions = {}): Dict {
  const limits = opts.limits ?? DEFAULT_LIMITS;
  const t = Array.isArray(fields) ? fieldsType(opts.event ?? "payload", fields) : (fields as Type);
  const given = payload ?? {};
  try {
    return t.check(given) as Dict;
  } catch (e) {
    if (!(e instanceof Invalid)) throw e;
    const found = report(t, given, "", undefined, limits);
    let action = `Send ${opts.event ?? "the event"} again with corrected data.`;
    if (found.unknown.length) action += " Unknown fields may be typos.";
    throw new InvalidWithFeedback(feedback(found, action));
  }
}

/** A new instance's context: the given values checked, defaults filled in; throws
 * `InvalidWithFeedback` with the `invalid_context` refusal's data. */
export function initialContext(fields: readonly Field[] | Type, given: unknown, opts: { limits?: Limits } = {}): Dict {
  const t = Array.isArray(fields) ? fieldsType("context", fields) : (fields as Type);
  const value = given ?? {};
  try {
    return t.check(value) as Dict;
  } catch (e) {
    if (!(e instanceof Invalid)) throw e;
    const found = report(t, value, "", undefined, opts.limits ?? DEFAULT_LIMITS);
    throw new InvalidWithFeedback(feedback(found, "Start the instance again with a corrected context."));
  }
}
