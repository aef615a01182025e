/**
 * Renders the lowered templates the compiler writes in `lowered_templates` (docs/ir.md,
 * "Lowered templates"): parts (`text`, `print`, `if`, `for`) whose expressions are read with
 * Jinja2's (Python's) meaning, so that the text is the one Jinja2 renders in the Python runtime.
 * Any failure throws `RenderError` (Jinja2 would raise too): a message then falls back to the
 * kind's default text, a journal or a named template fails.
 */
import { strip } from "./builtins.js";
import { method, printed, RenderError, TemplateEvent, TemplateTime, textOf, tojson, UNDEFINED } from "./template_text.js";
import type { Limits } from "./limits.js";
import { eq, strCmp } from "./operators.js";
import {
  codePoints, Float, grouped, hasKey, isDict, isFloat, isInt, strLen, truthy as pyTruthy,
  type Dict,
} from "./values.js";

export { RenderError, TemplateEvent, TemplateTime } from "./template_text.js";

export type Part = Readonly<Record<string, unknown>>;
type Node = Readonly<{ op: string; args?: readonly Node[]; value?: unknown }>;

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
    c = strCmp(a, b);
  } else {
    throw new RenderError("cannot compare these values");
  }
  if (Number.isNaN(c)) return false;
  return op === "<" ? c < 0 : op === "<=" ? c <= 0 : op === ">" ? c > 0 : c >= 0;
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

