/**
 * Renders the lowered templates the compiler writes in `lowered_templates` (docs/ir.md,
 * "Lowered templates"): parts (`text`, `print`, `if`, `for`) whose expressions are read with
 * Jinja2's (Python's) meaning, so that the text is the one Jinja2 renders in the Python runtime.
 * Any failure throws `RenderError` (Jinja2 would raise too): a message then falls back to the
 * kind's default text, a journal or a named template fails.
 */
import { strip } from "./builtins.js";
import type { Limits } from "./limits.js";
import { eq } from "./operators.js";
import {
  codePoints, Float, floatRepr, grouped, hasKey, isDict, isFloat, isInt, strLen, truthy as pyTruthy,
  type Dict,
} from "./values.js";

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

export type Part = Readonly<Record<string, unknown>>;
type Node = Readonly<{ op: string; args?: readonly Node[]; value?: unknown }>;

const UNDEFINED = Symbol("undefined");

/** Renders `parts` with `variables`; `limits` bounds the text and the loop iterations. */
export function renderParts(parts: readonly Part[], variables: Readonly<Dict>, limits?: Limits): string {
  const r = new Renderer(variables, limits);
  r.parts(parts);
  return r.out.join("");
}

/** Renders template `source`: its lowered form from `lowered` (a document's
 * `lowered_templates`), or its own text when it has none and needs none. */
export function renderSource(
  source: string,
  lowered: Readonly<Record<string, readonly Part[] | null>> | undefined,
  variables: Readonly<Dict>,
  limits?: Limits,
): string {
  const parts = lowered !== undefined && hasKey(lowered, source) ? lowered[source] : undefined;
  if (parts === null) throw new RenderError("the template is outside the lowered subset");
  if (parts !== undefined) return renderParts(parts, variables, limits);
  if (/\{[{%#]/.test(source) || source.endsWith("\n")) {
    throw new RenderError("the template has no lowered form");
  }
  return source;
}

class Renderer {
  readonly out: string[] = [];
  private size = 0;
  private steps = 0;
  private readonly locals: Dict[] = [];

  constructor(
    private readonly variables: Readonly<Dict>,
    private readonly limits?: Limits,
  ) {}

  private write(text: string): void {
    this.size += text.length;
    const most = this.limits?.maxTemplateOutput;
    if (most !== undefined && this.size > most) {
      throw new RenderError(`the template renders more than ${grouped(most)} characters`);
    }
    this.out.push(text);
  }

  parts(parts: readonly Part[]): void {
    for (const part of parts) {
      if (typeof part.text === "string") this.write(part.text);
      else if (part.print !== undefined) this.write(printed(this.expr(part.print as Node)));
      else if (Array.isArray(part.if)) this.branch(part);
      else this.loop(part);
    }
  }

  private branch(part: Part): void {
    for (const b of part.if as { test: Node; then: Part[] }[]) {
      if (truthy(this.expr(b.test))) {
        this.parts(b.then);
        return;
      }
    }
    this.parts((part.else as Part[] | undefined) ?? []);
  }

  private loop(part: Part): void {
    let items = this.expr(part.in as Node);
    if (items === UNDEFINED) items = []; // Jinja2's undefined iterates as empty
    else if (isDict(items)) items = Object.keys(items);
    else if (typeof items === "string") items = codePoints(items);
    if (!Array.isArray(items)) throw new RenderError("cannot loop over a value that is not a list");
    const list = items as unknown[];
    if (list.length === 0) {
      this.parts((part.else as Part[] | undefined) ?? []);
      return;
    }
    const n = list.length;
    this.steps += n;
    if (this.limits !== undefined && this.steps > this.limits.maxTemplateSteps) {
      throw new RenderError("the template loops too many times");
    }
    list.forEach((item, i) => {
      const loop = { index: i + 1, index0: i, revindex: n - i, revindex0: n - i - 1, first: i === 0, last: i === n - 1, length: n };
      this.locals.push({ [String(part.for)]: item, loop });
      try {
        this.parts((part.body as Part[] | undefined) ?? []);
      } finally {
        this.locals.pop();
      }
    });
  }

  expr(node: Node): unknown {
    const args = node.args ?? [];
    switch (node.op) {
      case "lit":
        return node.value ?? null;
      case "var":
        return hasKey(this.variables, String(node.value)) ? this.variables[String(node.value)] : UNDEFINED;
      case "local":
        for (let i = this.locals.length - 1; i >= 0; i--) {
          const scope = this.locals[i] as Dict;
          if (hasKey(scope, String(node.value))) return scope[String(node.value)];
        }
        return UNDEFINED;
      case "and":
      case "or": {
        const left = this.expr(args[0] as Node);
        if (truthy(left) === (node.op === "or")) return left;
        return this.expr(args[1] as Node);
      }
      case "cond":
        return this.expr((truthy(this.expr(args[0] as Node)) ? args[1] : args[2]) as Node);
      default:
        return apply(node.op, node.value, args.map((a) => this.expr(a)));
    }
  }
}

function apply(op: string, value: unknown, args: unknown[]): unknown {
  const [a, b] = args;
  switch (op) {
    case "attr":
      return member(a, value);
    case "index":
      return member(a, b);
    case "list":
      return args;
    case "not":
      return !truthy(a);
    case "==":
    case "!=":
      return equal(a, b) === (op === "==");
    case "<":
    case "<=":
    case ">":
    case ">=":
      return order(op, a, b);
    case "in":
    case "not in":
      return contains(b, a) === (op === "in");
    case "~":
      return textOf(a) + textOf(b);
    case "filter":
      return filter(String(value), args);
    case "method":
      return method(String(value), args);
    default:
      throw new RenderError(`unknown op ${op}`);
  }
}

function member(obj: unknown, key: unknown): unknown {
  if (obj === UNDEFINED) throw new RenderError("a member of an undefined value");
  const map = obj instanceof TemplateEvent ? (obj.payload ?? {}) : isDict(obj) ? obj : null;
  if (map !== null) return typeof key === "string" && hasKey(map, key) ? map[key] : UNDEFINED;
  if ((Array.isArray(obj) || typeof obj === "string") && typeof key === "number" && Number.isInteger(key)) {
    const items: unknown[] = typeof obj === "string" ? codePoints(obj) : (obj as unknown[]);
    const i = key < 0 ? items.length + key : key;
    return i >= 0 && i < items.length ? items[i] : UNDEFINED;
  }
  return UNDEFINED;
}

function equal(a: unknown, b: unknown): boolean {
  if (a instanceof TemplateEvent || b instanceof TemplateEvent) {
    const name = (x: unknown): unknown => (x instanceof TemplateEvent ? x.name : x);
    return typeof name(a) === "string" && name(a) === name(b);
  }
  if (a === UNDEFINED || b === UNDEFINED) return a === b;
  return eq(a, b);
}

function isNumber(x: unknown): boolean {
  return typeof x === "boolean" || isInt(x) || isFloat(x);
}

function order(op: string, a: unknown, b: unknown): boolean {
  let c: number;
  if (isNumber(a) && isNumber(b)) {
    const x = a instanceof Float ? a.value : typeof a === "boolean" ? Number(a) : (a as number | bigint);
    const y = b instanceof Float ? b.value : typeof b === "boolean" ? Number(b) : (b as number | bigint);
    c = x < y ? -1 : x > y ? 1 : x == y ? 0 : NaN;
  } else if (typeof a === "string" && typeof b === "string") {
    c = codeOrder(a, b);
  } else {
    throw new RenderError("cannot compare these values");
  }
  if (Number.isNaN(c)) return false;
  return op === "<" ? c < 0 : op === "<=" ? c <= 0 : op === ">" ? c > 0 : c >= 0;
}

function codeOrder(a: string, b: string): number {
  const xs = codePoints(a);
  const ys = codePoints(b);
  for (let i = 0; i < Math.min(xs.length, ys.length); i++) {
    const x = xs[i]?.codePointAt(0) ?? 0;
    const y = ys[i]?.codePointAt(0) ?? 0;
    if (x !== y) return x < y ? -1 : 1;
  }
  return xs.length - ys.length;
}

function contains(container: unknown, item: unknown): boolean {
  if (typeof container === "string") {
    if (typeof item !== "string") throw new RenderError("`in` a string takes a string");
    return container.includes(item);
  }
  if (isDict(container)) return typeof item === "string" && hasKey(container, item);
  if (Array.isArray(container)) return container.some((x) => equal(item, x));
  throw new RenderError("`in` a value that is not a container");
}

export function truthy(value: unknown): boolean {
  if (value === UNDEFINED || value === null || value === undefined) return false;
  if (value instanceof TemplateEvent || value instanceof TemplateTime) return true;
  return pyTruthy(value);
}

/** What a `print` part writes: null prints as nothing. */
function printed(value: unknown): string {
  return value === null ? "" : textOf(value);
}

/** A value as text (`~`, `join`, the string filters): null is `None` here. */
function textOf(value: unknown): string {
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

function filter(name: string, args: unknown[]): unknown {
  const subject = args[0];
  if (name === "length") {
    if (subject === UNDEFINED) return 0;
    if (typeof subject === "string") return strLen(subject);
    if (Array.isArray(subject)) return subject.length;
    if (subject instanceof TemplateEvent) return Object.keys(subject.payload ?? {}).length;
    if (isDict(subject)) return Object.keys(subject).length;
    throw new RenderError("`length` of a value without one");
  }
  if (subject === UNDEFINED) {
    // Jinja2's undefined is an empty text and an empty iterable; only JSON refuses it.
    if (name === "tojson") throw new RenderError("`tojson` of an undefined value");
    return "";
  }
  if (name === "tojson") return tojson(subject);
  if (name === "join") {
    let items: unknown[];
    if (Array.isArray(subject)) items = subject;
    else if (isDict(subject)) items = Object.keys(subject);
    else if (subject instanceof TemplateEvent) items = Object.keys(subject.payload ?? {});
    else if (typeof subject === "string") items = codePoints(subject);
    else throw new RenderError("`join` takes a list");
    const sep = args.length > 1 ? textOf(args[1]) : "";
    return items.map(textOf).join(sep);
  }
  const text = textOf(subject);
  if (name === "lower") return text.toLowerCase();
  if (name === "upper") return text.toUpperCase();
  if (name === "trim") return strip(text);
  throw new RenderError(`unknown filter ${name}`);
}

function jsonAscii(text: string): string {
  let out = '"';
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const ch = text.charAt(i);
    if (ch === '"') out += '\\"';
    else if (ch === "\\") out += "\\\\";
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (ch === "\b") out += "\\b";
    else if (ch === "\f") out += "\\f";
    else if (c < 0x20 || c > 0x7e) out += "\\u" + c.toString(16).padStart(4, "0");
    else out += ch;
  }
  return out + '"';
}

function json(value: unknown): string {
  if (value === null) return "null";
  if (typeof value === "boolean") return value ? "true" : "false";
  if (typeof value === "string") return jsonAscii(value);
  if (typeof value === "bigint" || (typeof value === "number" && Number.isInteger(value))) return String(value);
  if (typeof value === "number" || value instanceof Float) {
    const n = value.valueOf();
    return Number.isNaN(n) ? "NaN" : !Number.isFinite(n) ? (n > 0 ? "Infinity" : "-Infinity") : floatRepr(n);
  }
  if (Array.isArray(value)) return "[" + value.map(json).join(", ") + "]";
  if (value instanceof TemplateEvent) return json(value.payload ?? {});
  if (isDict(value)) {
    const keys = Object.keys(value).sort(codeOrder);
    return "{" + keys.map((k) => `${jsonAscii(k)}: ${json(value[k])}`).join(", ") + "}";
  }
  throw new RenderError("`tojson` of a value JSON cannot hold");
}

function tojson(value: unknown): string {
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

function method(name: string, args: unknown[]): string {
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
