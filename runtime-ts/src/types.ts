/**
 * The value types of a flow (runtime/validate.py `Type`, `TypeSystem`): each IR `TypeRef` is
 * compiled once into a `Type` whose `check(value)` returns the value normalised (a new
 * container; record fields left out filled from their defaults; integral floats become ints,
 * ints in float fields become floats) or throws `Invalid`.
 */
import { IRLoadError } from "./faults.js";
import { DEFAULT_LIMITS, type Limits } from "./limits.js";
import {
  Float, hasKey, isDict, isFloat, isInt, mkFloat, mkInt, repr, setKey, strLen, toFloat, type Dict,
} from "./values.js";

/** Thrown by `Type.check`; carries nothing (validate.ts `report` says what is wrong). */
export class Invalid extends Error {
  constructor() {
    super("invalid value");
    this.name = "Invalid";
  }
}

export type Check = (x: unknown) => unknown;

export interface Field {
  readonly name: string;
  readonly type: Type;
  readonly required: boolean;
  readonly default: unknown;
}

function invalid(): never {
  throw new Invalid();
}

function show(v: number): string {
  return Number.isInteger(v) ? String(v) : repr(v);
}

function rangeWords(lo: number | null, hi: number | null): string {
  if (lo !== null && hi !== null) return ` from ${show(lo)} to ${show(hi)}`;
  if (lo !== null) return ` >= ${show(lo)}`;
  if (hi !== null) return ` <= ${show(hi)}`;
  return "";
}

export class Type {
  item: Type | null = null;
  fields: readonly Field[] = [];
  members: ReadonlySet<string> = new Set();
  min: number | null = null;
  max: number | null = null;
  hasRecord = false;
  /** Whether a type-checked value of this type is stored as it is (no record, float, range). */
  normal = false;
  check: Check = invalid;

  constructor(
    readonly kind: string,
    readonly name: string | null = null,
  ) {}

  /** What a valid value is, in words ("an integer from 1 to 5"). */
  requirement(): string {
    const kind = this.kind;
    if (kind === "bool") return "true or false";
    if (kind === "int" || kind === "float") {
      return (kind === "int" ? "an integer" : "a number") + rangeWords(this.min, this.max);
    }
    if (kind === "str") return "a string";
    if (kind === "enum") return "one of " + [...this.members].sort(codeOrder).join(", ");
    if (kind === "json") return "any JSON value";
    const item = this.item;
    if (kind === "list" && item) return `a list, each item ${item.requirement()}`;
    if (kind === "map" && item) return `an object with string keys, each value ${item.requirement()}`;
    if (kind === "optional" && item) return `${item.requirement()}, or null`;
    const names = this.fields.map((f) => f.name).join(", ");
    return names ? `a ${String(this.name)} object (${names})` : `a ${String(this.name)} object`;
  }
}

function codeOrder(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function checkBool(x: unknown): unknown {
  return typeof x === "boolean" ? x : invalid();
}

function intCheck(limits: Limits): Check {
  return (x) => {
    let v: number | bigint;
    if (isInt(x)) v = x;
    else if (x instanceof Float && Number.isFinite(x.value)) v = mkInt(BigInt(x.value));
    else return invalid();
    return limits.intProblem(v) === null ? v : invalid();
  };
}

function checkFloat(x: unknown): unknown {
  if (isFloat(x) || isInt(x)) {
    const n = typeof x === "bigint" ? Number(x) : toFloat(x);
    return Number.isFinite(n) ? mkFloat(n) : invalid();
  }
  return invalid();
}

function strCheck(limits: Limits): Check {
  return (x) => (typeof x === "string" && limits.stringProblem(x) === null ? x : invalid());
}

function bounded(inner: Check, lo: number | null, hi: number | null): Check {
  return (x) => {
    const v = inner(x) as number | bigint | Float;
    const n = v instanceof Float ? v.value : v;
    if ((lo !== null && n < lo) || (hi !== null && n > hi)) invalid();
    return v;
  };
}

function enumCheck(members: ReadonlySet<string>): Check {
  return (x) => (typeof x === "string" && members.has(x) ? x : invalid());
}

function listCheck(item: Type, limits: Limits): Check {
  return (x) => {
    if (!Array.isArray(x) || x.length > limits.maxItems) invalid();
    return (x as unknown[]).map((v) => item.check(v));
  };
}

function mapCheck(item: Type, limits: Limits, key: Check): Check {
  return (x) => {
    if (!isDict(x)) invalid();
    const entries = Object.entries(x);
    if (entries.length > limits.maxItems) invalid();
    const out: Dict = {};
    for (const [k, v] of entries) setKey(out, key(k) as string, item.check(v));
    return out;
  };
}

/** Any JSON value, copied, within the limits (strings, integers, items, depth, size). */
function jsonCheck(limits: Limits, str: Check, int: Check): Check {
  const copy = (x: unknown, depth: number, budget: { left: number }): unknown => {
    if (x === null || typeof x === "boolean") return x;
    if (typeof x === "string") {
      budget.left -= strLen(str(x) as string);
    } else if (isInt(x)) {
      return int(x);
    } else if (isFloat(x)) {
      return Number.isFinite(x.valueOf()) ? x : invalid();
    } else if (Array.isArray(x) || isDict(x)) {
      const entries = Array.isArray(x) ? null : Object.entries(x);
      const n = entries === null ? (x as unknown[]).length : entries.length;
      if (depth >= limits.maxDepth || n > limits.maxItems) invalid();
      budget.left -= n;
      if (entries === null) {
        x = (x as unknown[]).map((v) => copy(v, depth + 1, budget));
      } else {
        const out: Dict = {};
        for (const [k, v] of entries) {
          budget.left -= strLen(str(k) as string);
          setKey(out, k, copy(v, depth + 1, budget));
        }
        x = out;
      }
    } else {
      invalid();
    }
    if (budget.left < 0) invalid();
    return x;
  };
  return (x) => copy(x, 0, { left: limits.maxValueSize });
}

function optionalCheck(item: Type): Check {
  return (x) => (x === null ? null : item.check(x));
}

/** The check of a record-like type (records, payloads, the context), reading `t.fields` when
 * called, so a record may be referenced before its fields are compiled. */
export function recordCheck(t: Type): Check {
  return (x) => {
    if (!isDict(x)) invalid();
    const given = x;
    const out: Dict = {};
    let found = 0;
    for (const f of t.fields) {
      if (hasKey(given, f.name)) {
        setKey(out, f.name, f.type.check(given[f.name]));
        found++;
      } else if (f.required) {
        invalid();
      } else {
        setKey(out, f.name, f.default);
      }
    }
    if (found !== Object.keys(given).length) invalid(); // a key that is not a field
    return out;
  };
}

/** A record-like type for an event payload or the context. */
export function fieldsType(name: string, fields: readonly Field[]): Type {
  const t = new Type("record", name);
  t.fields = fields;
  t.hasRecord = true;
  t.check = recordCheck(t);
  return t;
}

/** The IR's `TypeRef` and `FieldDef`, as JSON. */
export interface TypeRef {
  kind: string;
  name?: string | null;
  item?: TypeRef | null;
  min?: number | null;
  max?: number | null;
}
export interface FieldDef {
  name: string;
  type: TypeRef;
  required?: boolean;
  default?: unknown;
}

function numberOrNull(x: unknown): number | null {
  return x === null || x === undefined ? null : Number(x);
}

/** The enums and records of one flow, and every type compiled against them. */
export class TypeSystem {
  private readonly records = new Map<string, Type>();
  private readonly cache = new Map<string, Type>();
  private readonly checkStr: Check;
  private readonly checkInt: Check;

  constructor(
    private readonly enums: Readonly<Record<string, readonly string[]>>,
    private readonly recordDefs: Readonly<Record<string, readonly FieldDef[]>>,
    readonly limits: Limits = DEFAULT_LIMITS,
  ) {
    this.checkStr = strCheck(limits);
    this.checkInt = intCheck(limits);
  }

  /** The type system of a compiled flow (its `enums` and `records`). */
  static of(ir: { enums?: readonly { name: string; members: readonly string[] }[]; records?: readonly { name: string; fields: readonly FieldDef[] }[] }, limits: Limits = DEFAULT_LIMITS): TypeSystem {
    const enums: Record<string, readonly string[]> = {};
    for (const e of ir.enums ?? []) enums[e.name] = e.members;
    const records: Record<string, readonly FieldDef[]> = {};
    for (const r of ir.records ?? []) records[r.name] = r.fields;
    return new TypeSystem(enums, records, limits);
  }

  compile(ref: TypeRef): Type {
    const key = JSON.stringify([ref.kind, ref.name ?? null, ref.item ?? null, numberOrNull(ref.min), numberOrNull(ref.max)]);
    let found = this.cache.get(key);
    if (found === undefined) {
      found = this.build(ref);
      this.cache.set(key, found);
    }
    return found;
  }

  fields(raw: readonly FieldDef[], where: string): Field[] {
    return raw.map((f) => {
      const type = this.compile(f.type);
      const required = f.required ?? true;
      let value: unknown = null;
      if (!required) {
        try {
          value = type.check(f.default ?? null);
        } catch {
          throw new IRLoadError(`the default of ${where}.${f.name} is not ${type.requirement()}: ${repr(f.default ?? null)}`);
        }
      }
      return { name: f.name, type, required, default: value };
    });
  }

  private build(ref: TypeRef): Type {
    const kind = ref.kind;
    if (kind === "record") return this.record(String(ref.name));
    const t = new Type(kind, ref.name ?? null);
    t.min = numberOrNull(ref.min);
    t.max = numberOrNull(ref.max);
    const ranged = t.min !== null || t.max !== null;
    if (kind === "bool") t.check = checkBool;
    else if (kind === "int") t.check = ranged ? bounded(this.checkInt, t.min, t.max) : this.checkInt;
    else if (kind === "float") t.check = ranged ? bounded(checkFloat, t.min, t.max) : checkFloat;
    else if (kind === "str") t.check = this.checkStr;
    else if (kind === "enum") {
      const members = this.enums[t.name ?? ""];
      if (members === undefined) throw new IRLoadError(`unknown enum ${repr(t.name)}`);
      t.members = new Set(members);
      t.check = enumCheck(t.members);
    } else if (kind === "json") t.check = jsonCheck(this.limits, this.checkStr, this.checkInt);
    else if (kind === "list" || kind === "map" || kind === "optional") {
      if (!ref.item) throw new IRLoadError(`a ${kind} type needs an item type`);
      const item = this.compile(ref.item);
      t.item = item;
      t.hasRecord = item.hasRecord;
      if (kind === "list") t.check = listCheck(item, this.limits);
      else if (kind === "map") t.check = mapCheck(item, this.limits, this.checkStr);
      else t.check = optionalCheck(item);
    } else throw new IRLoadError(`unknown type kind ${repr(kind)}`);
    t.normal = !(t.hasRecord || kind === "float" || ranged || (t.item !== null && !t.item.normal));
    return t;
  }

  private record(name: string): Type {
    const found = this.records.get(name);
    if (found !== undefined) return found;
    const raw = hasKey(this.recordDefs, name) ? this.recordDefs[name] : undefined;
    if (raw === undefined) throw new IRLoadError(`unknown record type ${repr(name)}`);
    const t = new Type("record", name);
    t.hasRecord = true;
    this.records.set(name, t); // before its fields: a record may contain itself in a list
    t.check = recordCheck(t);
    t.fields = this.fields(raw, name);
    return t;
  }
}

/** The type of the context location an action writes (`Machine.target_type`). */
export function targetTypeOf(context: readonly Field[]): (path: readonly string[]) => Type {
  const byName = new Map(context.map((f) => [f.name, f]));
  return (path) => {
    const first = byName.get(path[0] ?? "");
    if (first === undefined) throw new IRLoadError(`an action writes unknown context field ${repr(path[0])}`);
    let ty = first.type;
    for (const name of path.slice(1)) {
      if (ty.kind === "optional" && ty.item !== null) ty = ty.item;
      const sub = ty.kind === "record" ? ty.fields.find((f) => f.name === name) : undefined;
      if (sub === undefined) throw new IRLoadError(`an action writes unknown field ${repr(path.join("."))}`);
      ty = sub.type;
    }
    return ty;
  };
}
