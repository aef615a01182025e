// The compiled flow (IR JSON, versions 1 to 5) as typed views, checked once when loaded
// (`loadFlow`). Expressions and action blocks stay JSON: src/expr.ts interprets them.
import { IRLoadError } from "./faults.js";
import type { FieldDef } from "./types.js";

export const IR_VERSIONS = [1, 2, 3, 4, 5] as const;

export const STATE_KINDS = ["normal", "final", "choice", "compound", "parallel", "history"] as const;
export const RULE_KINDS = ["event", "direct", "choice", "else", "timer", "reject", "always"] as const;
export type StateKind = (typeof STATE_KINDS)[number];
export type RuleKind = (typeof RULE_KINDS)[number];

/** An expression node (`{op, args, value}`), interpreted by src/expr.ts. */
export type Expr = Record<string, unknown>;
/** An action block: a list of action nodes. */
export type Actions = unknown[];

export { IRLoadError };
export type { FieldDef };

export interface RequirementDef {
  guard: Expr;
  code: string;
  message: string;
  data?: Expr | null;
}

export interface EventDef {
  name: string;
  fields: FieldDef[];
  requires: RequirementDef[];
  /** IR version 4: only the flow itself sends it (`raise`, a scheduled `send`); a host's send
   * is refused (`internal_event`) */
  internal: boolean;
}

export interface StateDef {
  name: string;
  kind: StateKind;
  initial: boolean;
  title: string | null;
  meta: Record<string, unknown>;
  entry: Actions;
  exit: Actions;
  parent: string | null;
  history: "shallow" | "deep" | null;
  default: string | null;
  initial_targets: string[];
  initial_actions: Actions;
  done_data: Expr | null;
  unhandled: "refuse" | "ignore";
  line: number;
  /** IR version 5: the child flows the state starts when entered, in source order */
  invokes: InvokeDef[];
}

/** `invoke FLOW(...) [for ITEM[, INDEX] in EXPR] [as ID [into FIELD]] [join ...] [forward]
 * [finalize do ...]` (IR version 5): what src/children.ts starts. */
export interface InvokeDef {
  id: string;
  /** a key of the flow's `children` */
  flow: string;
  /** a `map` expression: the child's context fields */
  input: Expr | null;
  /** a fan-out's list */
  each: Expr | null;
  item: string | null;
  index: string | null;
  /** a fan-out's join: null every child, N the first N */
  join: number | null;
  forward: boolean;
  finalize: Actions;
  /** `into FIELD`: the context path set to the child's id */
  id_target: string[];
}

export interface RuleDef {
  index: number;
  source: string;
  target: string | null;
  kind: RuleKind;
  event: string | null;
  guard: Expr | null;
  actions: Actions;
  back: boolean;
  after_ms: number | null;
  after_expr: Expr | null;
  code: string | null;
  message: string | null;
  data: Expr | null;
  reenter: boolean;
  line: number;
}

export interface FlowDef {
  ir_version: number;
  name: string;
  title: string | null;
  version: number;
  hash: string;
  enums: { name: string; members: string[] }[];
  records: { name: string; fields: FieldDef[] }[];
  context: FieldDef[];
  events: EventDef[];
  effects: EventDef[];
  states: StateDef[];
  transitions: RuleDef[];
  initial: string;
  messages: Record<string, string>;
  journals: { name: string; template: string }[];
  templates: Record<string, string>;
  invariants: { name: string; expr: Expr }[];
  /** IR version 5: every flow a state invokes, by name (each a complete compiled flow) */
  children: Record<string, Json>;
  /** template source -> its lowered parts (null: outside the subset), for src/template.ts */
  lowered: Record<string, Record<string, unknown>[] | null>;
  /** the JSON as given, for what this loader does not model */
  raw: Record<string, unknown>;
}

type Json = Record<string, unknown>;

/** The members each IR object may have, and those it must have (Python's models forbid any
 * other: a typo or a hand edit is refused, not dropped). */
const MEMBERS = {
  flow: [["context", "effects", "enums", "events", "hash", "initial", "invariants", "ir_version", "journals",
    "children", "lowered_templates", "messages", "migrations", "name", "records", "states", "templates", "title", "transitions",
    "version"], ["initial", "name"]],
  state: [["column", "default", "done_data", "entry", "exit", "history", "initial", "initial_actions",
    "initial_targets", "invokes", "kind", "line", "meta", "name", "parent", "title", "unhandled"], ["name"]],
  transition: [["actions", "after_expr", "after_ms", "back", "code", "column", "data", "event", "guard", "index",
    "inherited", "kind", "line", "message", "reenter", "source", "target"], ["index", "kind", "source", "target"]],
  field: [["default", "hidden", "input", "name", "required", "type"], ["name", "type"]],
  event: [["fields", "internal", "name", "requires"], ["name"]],
  requirement: [["code", "data", "guard", "message"], ["code", "guard", "message"]],
  journal: [["name", "template"], ["name", "template"]],
  enum: [["members", "name"], ["members", "name"]],
  record: [["fields", "name"], ["fields", "name"]],
  invoke: [["column", "each", "finalize", "flow", "forward", "id", "id_target", "index", "input", "item", "join", "line"],
    ["flow", "id"]],
} as const satisfies Record<string, readonly [readonly string[], readonly string[]]>;

function shape(raw: Json, kind: keyof typeof MEMBERS, where: string): Json {
  const [allowed, required] = MEMBERS[kind];
  const unknown = Object.keys(raw).filter((k) => !(allowed as readonly string[]).includes(k)).sort();
  if (unknown.length > 0) {
    throw new IRLoadError(`compiled flow does not match its IR version: ${where} has unknown field(s) ${unknown.slice(0, 5).map((k) => `'${k}'`).join(", ")}`);
  }
  const missing = required.filter((k) => !(k in raw));
  if (missing.length > 0) {
    throw new IRLoadError(`compiled flow does not match its IR version: ${where} lacks required field(s) ${missing.map((k) => `'${k}'`).join(", ")}`);
  }
  return raw;
}

function isObject(v: unknown): v is Json {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function list(raw: Json, key: string, where: string): unknown[] {
  const v = raw[key];
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw new IRLoadError(`malformed compiled flow: ${where}.${key} is not a list`);
  return v;
}

function objects(raw: Json, key: string, where: string): Json[] {
  return list(raw, key, where).map((v, i) => {
    if (!isObject(v)) throw new IRLoadError(`malformed compiled flow: ${where}.${key}[${i}] is not an object`);
    return v;
  });
}

function text(raw: Json, key: string, where: string): string {
  const v = raw[key];
  if (typeof v !== "string") throw new IRLoadError(`malformed compiled flow: ${where}.${key} is not a string`);
  return v;
}

function optText(raw: Json, key: string, where: string): string | null {
  const v = raw[key];
  if (v === undefined || v === null) return null;
  return text(raw, key, where);
}

function optInt(raw: Json, key: string, where: string): number | null {
  const v = raw[key];
  if (v === undefined || v === null) return null;
  if (typeof v !== "number" || !Number.isInteger(v)) {
    throw new IRLoadError(`malformed compiled flow: ${where}.${key} is not an integer`);
  }
  return v;
}

function optExpr(raw: Json, key: string, where: string): Expr | null {
  const v = raw[key];
  if (v === undefined || v === null) return null;
  if (!isObject(v) || typeof v.op !== "string") {
    throw new IRLoadError(`compiled flow does not match its IR version: ${where} ${key} must be an expression object`);
  }
  return v;
}

/** A literal guard is `true` or `false` (the compiler writes no other; a hand-edited `lit 5`
 * would otherwise act as true). */
function guardOf(raw: Json, where: string): Expr | null {
  const guard = optExpr(raw, "guard", where);
  if (guard?.op === "lit" && typeof guard.value !== "boolean") {
    throw new IRLoadError(`compiled flow does not match its IR version: ${where} guard is ${JSON.stringify(guard.value)}, not a bool: a literal guard is \`true\` or \`false\``);
  }
  return guard;
}

function fields(raw: Json, key: string, where: string): FieldDef[] {
  return objects(raw, key, where).map((f, i) => {
    shape(f, "field", `${where}.${key}[${i}]`);
    text(f, "name", `${where}.${key}[${i}]`);
    if (!isObject(f.type)) throw new IRLoadError(`malformed compiled flow: field ${String(f.name)} has no type`);
    return f as unknown as FieldDef;
  });
}

function eventDef(e: Json, where: string): EventDef {
  shape(e, "event", where);
  const requires = objects(e, "requires", where).map((r, i) => {
    const at = `${where}.requires[${i}]`;
    shape(r, "requirement", at);
    const guard = guardOf(r, at);
    if (guard === null) throw new IRLoadError(`malformed compiled flow: ${at} has no guard`);
    return { guard, code: text(r, "code", at), message: text(r, "message", at), data: optExpr(r, "data", at) };
  });
  const internal = e.internal ?? false;
  if (typeof internal !== "boolean") throw new IRLoadError(`malformed compiled flow: ${where}.internal is not a bool`);
  return { name: text(e, "name", where), fields: fields(e, "fields", where), requires, internal };
}

function stateDef(s: Json, i: number): StateDef {
  const where = `states[${i}]`;
  shape(s, "state", where);
  const kind = s.kind ?? "normal";
  if (!STATE_KINDS.includes(kind as StateKind)) {
    throw new IRLoadError(`state ${JSON.stringify(s.name)} has unknown kind ${JSON.stringify(kind)}`);
  }
  const history = s.history ?? null;
  if (history !== null && history !== "shallow" && history !== "deep") {
    throw new IRLoadError(`malformed compiled flow: ${where}.history`);
  }
  return {
    name: text(s, "name", where),
    kind: kind as StateKind,
    initial: s.initial === true,
    title: optText(s, "title", where),
    meta: isObject(s.meta) ? s.meta : {},
    entry: list(s, "entry", where),
    exit: list(s, "exit", where),
    parent: optText(s, "parent", where),
    history,
    default: optText(s, "default", where),
    initial_targets: list(s, "initial_targets", where).map(String),
    initial_actions: list(s, "initial_actions", where),
    done_data: optExpr(s, "done_data", where),
    unhandled: s.unhandled === "ignore" ? "ignore" : "refuse",
    line: optInt(s, "line", where) ?? 0,
    invokes: objects(s, "invokes", where).map((v, k) => invokeDef(v, `${where}.invokes[${k}]`)),
  };
}

function invokeDef(v: Json, where: string): InvokeDef {
  shape(v, "invoke", where);
  const join = optInt(v, "join", where);
  if (join !== null && join < 0) throw new IRLoadError(`malformed compiled flow: ${where}.join is negative`);
  return {
    id: text(v, "id", where),
    flow: text(v, "flow", where),
    input: optExpr(v, "input", where),
    each: optExpr(v, "each", where),
    item: optText(v, "item", where),
    index: optText(v, "index", where),
    join,
    forward: v.forward === true,
    finalize: list(v, "finalize", where),
    id_target: list(v, "id_target", where).map(String),
  };
}

/** IR version 5: the child flows, by name (each loaded when first started). */
function childrenOf(raw: Json): Record<string, Json> {
  const v = raw.children;
  if (v === undefined || v === null) return {};
  if (!isObject(v) || !Object.values(v).every(isObject)) throw new IRLoadError("a compiled flow's `children` must be an object");
  return v as Record<string, Json>;
}

function ruleDef(t: Json, i: number): RuleDef {
  const where = `transitions[${i}]`;
  shape(t, "transition", where);
  const index = optInt(t, "index", where);
  if (index === null) throw new IRLoadError(`malformed compiled flow: ${where}.index`);
  const kind = text(t, "kind", where);
  if (!RULE_KINDS.includes(kind as RuleKind)) {
    throw new IRLoadError(`transition #${index} has unknown kind ${JSON.stringify(kind)}`);
  }
  return {
    index,
    source: text(t, "source", where),
    target: optText(t, "target", where),
    kind: kind as RuleKind,
    event: optText(t, "event", where),
    guard: guardOf(t, where),
    actions: list(t, "actions", where),
    back: t.back === true,
    after_ms: optInt(t, "after_ms", where),
    after_expr: optExpr(t, "after_expr", where),
    code: optText(t, "code", where),
    message: optText(t, "message", where),
    data: optExpr(t, "data", where),
    reenter: t.reenter === true,
    line: optInt(t, "line", where) ?? 0,
  };
}

function stringMap(raw: Json, key: string): Record<string, string> {
  const v = raw[key];
  if (!isObject(v)) return {};
  const out: Record<string, string> = {};
  for (const [k, x] of Object.entries(v)) if (typeof x === "string") out[k] = x;
  return out;
}

/** The lowered templates (docs/ir.md): an object of part arrays or nulls. */
function loweredOf(raw: Json): FlowDef["lowered"] {
  const v = raw.lowered_templates;
  if (v === undefined || v === null) return {};
  if (!isObject(v) || !Object.values(v).every((x) => x === null || Array.isArray(x))) {
    throw new IRLoadError("compiled flow does not match its IR version: lowered_templates must be an object of arrays or nulls");
  }
  return v as FlowDef["lowered"];
}

/** The compiled flow `json` (a parsed object or its text) as typed views; throws
 * `IRLoadError` for anything the Python runtime's loader refuses at this level. */
export function loadFlow(json: unknown): FlowDef {
  let raw: unknown = json;
  if (typeof json === "string") {
    try {
      raw = JSON.parse(json);
    } catch (e) {
      throw new IRLoadError(`compiled flow is not JSON: ${String(e).slice(0, 200)}`);
    }
  }
  if (!isObject(raw)) throw new IRLoadError("compiled flow must be a JSON object");
  shape(raw, "flow", "the document");
  const version = raw.ir_version ?? 1;
  if (typeof version !== "number" || !(IR_VERSIONS as readonly number[]).includes(version)) {
    throw new IRLoadError(
      `compiled flow has ir_version ${JSON.stringify(version)}; this runtime reads ${IR_VERSIONS.join(" and ")}`,
    );
  }
  return {
    ir_version: version,
    name: text(raw, "name", "flow"),
    title: optText(raw, "title", "flow"),
    version: optInt(raw, "version", "flow") ?? 1,
    hash: optText(raw, "hash", "flow") ?? "",
    enums: objects(raw, "enums", "flow").map((e) => shape(e, "enum", "an enum")).map((e) => ({ name: text(e, "name", "enum"), members: list(e, "members", "enum").map(String) })),
    records: objects(raw, "records", "flow").map((r) => shape(r, "record", "a record")).map((r) => ({ name: text(r, "name", "record"), fields: fields(r, "fields", "record") })),
    context: fields(raw, "context", "flow"),
    events: objects(raw, "events", "flow").map((e, i) => eventDef(e, `events[${i}]`)),
    effects: objects(raw, "effects", "flow").map((e, i) => eventDef(e, `effects[${i}]`)),
    states: objects(raw, "states", "flow").map(stateDef),
    transitions: objects(raw, "transitions", "flow").map(ruleDef),
    initial: text(raw, "initial", "flow"),
    messages: stringMap(raw, "messages"),
    journals: objects(raw, "journals", "flow").map((j) => shape(j, "journal", "a journal")).map((j) => ({ name: text(j, "name", "journal"), template: text(j, "template", "journal") })),
    templates: stringMap(raw, "templates"),
    invariants: objects(raw, "invariants", "flow").map((v) => ({ name: text(v, "name", "invariant"), expr: optExpr(v, "expr", "invariant") ?? {} })),
    lowered: loweredOf(raw),
    children: childrenOf(raw),
    raw,
  };
}
