// The runtime's rejection messages (runtime/messages.py), and a renderer for the template
// subset they use (`{{ a.b }}`, `{{ x | join(', ') }}`, `{% if a %}..{% else %}..{% endif %}`):
// the defaults are in no document's `lowered_templates` (src/template.ts renders those).
import { TemplateEvent } from "./template.js";
import { pyStr } from "./values.js";

export const DEFAULT_MESSAGES: Readonly<Record<string, string>> = {
  invalid_payload: "Invalid payload for '{{ event }}': {{ issue_count }} issue(s).",
  invalid_context: "Invalid context: {{ issue_count }} issue(s).",
  unknown_event: "Unknown event '{{ event }}'.",
  event_not_accepted: "Event '{{ event }}' is not accepted in state '{{ state.name }}'.",
  ignored: "Event '{{ event }}' was ignored in state '{{ state.name }}'.",
  guard_failed:
    "{% if event %}No rule for '{{ event }}' in state '{{ state.name }}' has a guard that holds." +
    "{% else %}The edge from '{{ from }}' to '{{ to }}' is closed: its guard does not hold.{% endif %}",
  unknown_state: "Unknown state '{{ to }}'.",
  invalid_transition: "Cannot go from '{{ from }}' to '{{ to }}'.",
  backward_requires_force: "Going back from '{{ from }}' to '{{ to }}' needs force.",
  no_previous_state: "There is no earlier state to go back to from '{{ state.name }}'.",
  instance_final: "The instance has finished in state '{{ state.name }}'.",
  routing_loop: "Routing from '{{ state.name }}' went round in a loop.",
  expression_error: "Could not evaluate {{ where }}: {{ detail }}.",
  limit_exceeded: "The step went past a limit in {{ where }}: {{ detail }}.",
  invalid_argument: "The {{ argument }} given is not allowed: {{ problem }}.",
  conflict: "The instance was changed by someone else; try again.",
  invariant_violated: "The step was refused: it would break the invariant {{ invariants | join(', ') }}.",
};

function lookup(vars: Record<string, unknown>, path: string): unknown {
  let v: unknown = vars;
  for (const part of path.split(".")) {
    if (v instanceof TemplateEvent) v = part === "name" ? { name: v.name } : (v.payload ?? {});
    if (typeof v !== "object" || v === null || !(part in v)) return undefined;
    v = (v as Record<string, unknown>)[part];
  }
  return v;
}

function show(v: unknown): string {
  if (v instanceof TemplateEvent) return v.name;
  return v === undefined ? "" : pyStr(v);
}

const EXPR = /^\s*([\w.]+)\s*(?:\|\s*join\(\s*'([^']*)'\s*\)\s*)?$/;

function expr(text: string, vars: Record<string, unknown>): string {
  const m = EXPR.exec(text);
  if (m === null) throw new Error(`unsupported template expression: ${text}`);
  const value = lookup(vars, m[1] ?? "");
  if (m[2] !== undefined) return Array.isArray(value) ? value.map(show).join(m[2]) : show(value);
  return show(value);
}

function truthy(v: unknown): boolean {
  return !(v === undefined || v === null || v === false || v === "" || v === 0 || (Array.isArray(v) && v.length === 0));
}

/** Render `source` (the subset above); throws for anything else. */
export function renderSimple(source: string, vars: Record<string, unknown>): string {
  const cond = /\{%\s*if\s+([\w.]+)\s*%\}([\s\S]*?)(?:\{%\s*else\s*%\}([\s\S]*?))?\{%\s*endif\s*%\}/g;
  const flat = source.replace(cond, (_all, test: string, yes: string, no: string | undefined) =>
    truthy(lookup(vars, test)) ? yes : (no ?? ""),
  );
  if (flat.includes("{%")) throw new Error("unsupported template statement");
  return flat.replace(/\{\{([\s\S]*?)\}\}/g, (_all, inner: string) => expr(inner, vars)).trim();
}
