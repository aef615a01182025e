/**
 * The values templates see (the event, the time, undefined) and how a template writes values:
 * printed, as text, as JSON (`tojson`), the time's methods (docs/ir.md, "Lowered templates").
 */
import { strCmp } from "./operators.js";
import { codePoints, Float, floatRepr, hasKey, isDict, jsonString, type Dict } from "./values.js";

export class RenderError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "RenderError";
  }
}

/** The event a template sees: prints as its name, equals its name, reads its payload. */
export class TemplateEvent {
  constructor(
    readonly name: string,
    readonly payload: Dict | null,
  ) {}
}

/** The step's time in a journal: UTC milliseconds. */
export class TemplateTime {
  constructor(readonly ms: number) {}
}

/** Jinja2's undefined: a variable or member that does not exist. */
export const UNDEFINED = Symbol("undefined");


/** What a `print` part writes: null prints as nothing. */
export function printed(value: unknown): string {
  return value === null ? "" : textOf(value);
}

/** A value as text (`~`, `join`, the string filters): null is `None` here. */
export function textOf(value: unknown): string {
  if (value === UNDEFINED) return "";
  if (typeof value === "string") return value;
  if (value instanceof TemplateEvent) return value.name;
  if (value instanceof TemplateTime) return time(value, " ");
  return repr(value);
}

function repr(value: unknown): string {
  if (value === null || value === undefined) return "None";
  if (typeof value === "boolean") return value ? "True" : "False";
  if (typeof value === "bigint") return value.toString();
  if (typeof value === "number") return Number.isInteger(value) ? String(value) : floatRepr(value);
  if (value instanceof Float) return floatRepr(value.value);
  if (typeof value === "string") return quoted(value);
  if (Array.isArray(value)) return "[" + value.map(repr).join(", ") + "]";
  if (isDict(value)) return "{" + Object.entries(value).map(([k, v]) => `${quoted(k)}: ${repr(v)}`).join(", ") + "}";
  throw new RenderError("cannot print this value");
}

const ESCAPES: Readonly<Record<string, string>> = { "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t" };

function quoted(text: string): string {
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of codePoints(text)) {
    const code = ch.codePointAt(0) ?? 0;
    if (hasKey(ESCAPES, ch)) out += ESCAPES[ch] ?? "";
    else if (ch === quote) out += "\\" + ch;
    else if (code < 0x20 || code === 0x7f) out += "\\x" + code.toString(16).padStart(2, "0");
    else out += ch;
  }
  return out + quote;
}

function two(n: number): string {
  return String(n).padStart(2, "0");
}

function time(t: TemplateTime, sep: string): string {
  const d = new Date(t.ms);
  const date = `${String(d.getUTCFullYear()).padStart(4, "0")}-${two(d.getUTCMonth() + 1)}-${two(d.getUTCDate())}`;
  let text = `${date}${sep}${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())}`;
  const ms = ((t.ms % 1000) + 1000) % 1000;
  if (ms) text += `.${String(ms * 1000).padStart(6, "0")}`;
  return text + "+00:00";
}

function json(value: unknown): string {
  if (value === null) return "null";
  if (typeof value === "boolean") return value ? "true" : "false";
  if (typeof value === "string") return jsonString(value, true);
  if (typeof value === "bigint" || (typeof value === "number" && Number.isInteger(value))) return String(value);
  if (typeof value === "number" || value instanceof Float) {
    const n = value.valueOf();
    return Number.isNaN(n) ? "NaN" : !Number.isFinite(n) ? (n > 0 ? "Infinity" : "-Infinity") : floatRepr(n);
  }
  if (Array.isArray(value)) return "[" + value.map(json).join(", ") + "]";
  if (value instanceof TemplateEvent) return json(value.payload ?? {});
  if (isDict(value)) {
    const keys = Object.keys(value).sort(strCmp);
    return "{" + keys.map((k) => `${jsonString(k, true)}: ${json(value[k])}`).join(", ") + "}";
  }
  throw new RenderError("`tojson` of a value JSON cannot hold");
}

export function tojson(value: unknown): string {
  return json(value).replace(/</g, "\\u003c").replace(/>/g, "\\u003e").replace(/&/g, "\\u0026").replace(/'/g, "\\u0027");
}

const DIRECTIVES: Readonly<Record<string, (d: Date) => string>> = {
  Y: (d) => String(d.getUTCFullYear()).padStart(4, "0"),
  m: (d) => two(d.getUTCMonth() + 1),
  d: (d) => two(d.getUTCDate()),
  H: (d) => two(d.getUTCHours()),
  M: (d) => two(d.getUTCMinutes()),
  S: (d) => two(d.getUTCSeconds()),
  "%": () => "%",
};

export function method(name: string, args: unknown[]): string {
  const at = args[0];
  if (!(at instanceof TemplateTime)) throw new RenderError(`\`${name}\` of something other than the time`);
  if (name === "isoformat") return time(at, "T");
  const fmt = String(args[1]);
  const d = new Date(at.ms);
  let out = "";
  for (let i = 0; i < fmt.length; i++) {
    const directive = fmt[i] === "%" && i + 1 < fmt.length ? DIRECTIVES[fmt.charAt(i + 1)] : undefined;
    if (directive !== undefined) {
      out += directive(d);
      i++;
    } else {
      out += fmt.charAt(i);
    }
  }
  return out;
}
