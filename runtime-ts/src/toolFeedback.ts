// What a tool call answers when its arguments are wrong, its handle is refused or its
// instance is unknown: the shapes of runtime/tool_calls.py (`_feedback`, `_issue`, `_under`,
// `_unknown_instance`) and runtime/store/handles.py (`InvalidHandle.to_dict`), so that a model
// reads the same feedback from either runtime.
import { codePoints, strRepr, typeName } from "./values.js";
import type { Tool } from "./tools.js";
import { HANDLE } from "./tools.js";

export type Json = Record<string, unknown>;

/** Python's name of a value's type, as feedback words it (None as "null"). */
export function pyTypeName(value: unknown): string {
  return value === null || value === undefined ? "null" : typeName(value);
}

export function issue(field: string, provided: unknown, requirement: string): Json {
  return {
    field,
    provided: provided ?? null,
    problem: `expected ${requirement}, got ${pyTypeName(provided)}`,
    requirement,
  };
}

/** Take argument `name` out of `args`: its value (undefined when absent). */
export function take(args: Json, name: string): unknown {
  const value = args[name];
  Reflect.deleteProperty(args, name);
  return value;
}

/** What is wrong with a tool's own arguments, in the runtime's feedback shape. */
export class Problems {
  readonly invalid: Json[] = [];
  readonly missing: Json[] = [];
  readonly unknown: string[] = [];

  get any(): boolean {
    return this.invalid.length + this.missing.length + this.unknown.length > 0;
  }

  /** Take argument `name` (a non-empty string) out of `args`. */
  string(args: Json, name: string, required: boolean): string | null {
    const given = name in args;
    const value = take(args, name);
    if (!given || (value === null && !required)) {
      if (required) this.missing.push({ field: name, requirement: "a string" });
      return null;
    }
    if (typeof value !== "string" || value === "") {
      this.invalid.push(issue(name, value, "a non-empty string"));
      return null;
    }
    return value;
  }

  /** Take an optional boolean argument out of `args` (false when absent or null). */
  boolean(args: Json, name: string): boolean {
    const value = take(args, name) ?? null;
    if (value === null) return false;
    if (typeof value !== "boolean") {
      this.invalid.push(issue(name, value, "true or false"));
      return false;
    }
    return value;
  }

  feedback(tool: Tool): Json {
    return feedback(tool, this.invalid, this.missing, this.unknown);
  }
}

export function feedback(tool: Tool, invalid: Json[] = [], missing: Json[] = [], unknown: string[] = []): Json {
  const count = invalid.length + missing.length + unknown.length;
  return {
    ok: false,
    error: "invalid_arguments",
    message: `Invalid arguments for '${tool.name}': ${count} issue(s).`,
    result: "validation_failed",
    issues: { invalid: [...invalid], missing: [...missing], unknown: [...unknown] },
    issue_count: count,
    action: `Call ${tool.name} again with corrected arguments. Unknown fields may be typos.`,
  };
}

/** A context rejection's feedback with its field paths under `prefix.` (as `start` takes it). */
export function under(prefix: string, data: Json): Json {
  const out = { ...data };
  const issues = out.issues;
  if (typeof issues !== "object" || issues === null || Array.isArray(issues)) return out;
  const moved: Json = {};
  for (const [key, items] of Object.entries(issues as Json)) {
    moved[key] = Array.isArray(items)
      ? items.map((i: unknown) => (typeof i === "object" && i !== null && !Array.isArray(i) ? { ...i, field: path(prefix, (i as Json).field) } : path(prefix, i)))
      : items;
  }
  out.issues = moved;
  return out;
}

function path(prefix: string, field: unknown): unknown {
  if (typeof field !== "string") return field;
  if (field === "") return prefix;
  return field.startsWith("[") ? `${prefix}${field}` : `${prefix}.${field}`;
}

export function unknownInstance(instanceId: string, start: string): Json {
  return {
    ok: false,
    error: "unknown_instance",
    message: `There is no instance ${strRepr(instanceId)}. Use the instance_id that ${start} returned.`,
    [HANDLE]: instanceId,
  };
}

// ---- handles (ids and keys) ----------------------------------------------------------------

/** The longest id or key, in characters; how many characters a refusal echoes. */
export const MAX_HANDLE = 256;
const ECHO = 40;

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** What is wrong with `value` as an instance id or request id, or null. */
export function handleProblem(value: unknown): string | null {
  if (typeof value !== "string") return `expected a string, got ${pyTypeName(value)}`;
  const chars = codePoints(value);
  if (chars.length === 0) return "it is empty";
  if (chars.length > MAX_HANDLE) return `it is ${chars.length} characters long; at most ${MAX_HANDLE} are allowed`;
  if (value.includes("\0")) return "it contains a NUL character";
  if (LONE_SURROGATE.test(value)) return "it contains a lone surrogate (not valid Unicode text)";
  return null;
}

function shorten(value: string): string {
  const chars = codePoints(value);
  const shown = strRepr(chars.slice(0, ECHO).join(""));
  return chars.length <= ECHO ? shown : `${shown.slice(0, -1)}…' (${chars.length} characters)`;
}

/** The refusal of a bad handle, with the tool's name for the argument it came in. */
export function invalidHandle(field: string, value: string, problem: string): Json {
  const shown = shorten(value);
  return {
    ok: false,
    error: "invalid_handle",
    kind: "invalid_handle",
    field,
    message: `${field} ${shown} is refused: ${problem}.`,
    provided: shown,
    problem,
  };
}

// ---- depth ------------------------------------------------------------------------------

/** How deep a value in a result may nest before it is shown as `TOO_DEEP`. */
export const SHOWN_DEPTH = 32;
export const TOO_DEEP = "(nested too deeply to show)";

export function shallow(data: Json, depth: number): Json {
  const out: Json = {};
  for (const [key, value] of Object.entries(data)) out[key] = cut(value, depth - 1);
  return out;
}

function cut(value: unknown, depth: number): unknown {
  if (Array.isArray(value)) return depth <= 0 ? TOO_DEEP : value.map((v: unknown) => cut(v, depth - 1));
  if (typeof value === "object" && value !== null) return depth <= 0 ? TOO_DEEP : shallow(value as Json, depth);
  return value;
}
