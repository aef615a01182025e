// The engine's one door to the expression semantics (src/expr.ts, src/validate.ts,
// src/rejections.ts): evaluating and running the IR, checking payloads and contexts, and
// making rejections, for one machine.
import { newOutputs, type Ctx, type Exec, type StepScope } from "./engine.js";
import { copyJson, leavesAfter, type Entry } from "./history.js";
import type { EventDef, Expr } from "./ir.js";
import type { Machine } from "./machine.js";
import { messageSource, messageText, messageVariables } from "./rejections.js";
import { Rejection } from "./outcome.js";
import type { Rule, StateNode } from "./tree.js";
import { describeFault, evaluate, ExprFault, LimitExceeded, newEnv, runActions, type Env } from "./expr.js";
import { type Limits, textProblem } from "./limits.js";
import { type Field, type Type, TypeSystem, fieldsType, targetTypeOf } from "./types.js";
import { checkPayload, initialContext, Invalid, InvalidWithFeedback, report } from "./validate.js";
import { fromPlain, hasKey, toPlain, truthy as pyTruthy, type Dict } from "./values.js";
import { renderSource, TemplateEvent, TemplateTime } from "./template.js";
import { SnapshotError } from "./snapshot.js";

export interface Semantics {
  readonly exec: Exec;
  readonly limits: Limits;
  startContext(given: unknown): { ok: true; value: Ctx } | { ok: false; rejection: Rejection };
  checkPayload(st: StateNode, ev: EventDef, payload: unknown, ctx: Ctx): { ok: true; value: unknown } | { ok: false; rejection: Rejection };
  /** the payload of an event sent without one; undefined when some field is required */
  emptyPayload(ev: EventDef): unknown;
  rejection(kind: string, st: StateNode, event: string | null, payload: unknown, ctx: Ctx, data: Record<string, unknown> | null): Rejection;
  refusal(kind: string, code: string, template: string | null, data: Expr | null, rule: number | null, dataState: StateNode,
    event: string | null, p: unknown, ctx: Ctx, where: string, reportState?: StateNode): Rejection;
  refused(rule: Rule, payload: unknown, st: StateNode, event: string | null, ctx: Ctx, scope: StepScope): Rejection;
  fault(exc: unknown, where: string, st: StateNode, event: string | null, p: unknown, ctx: Ctx): Rejection;
  badArgument(st: StateNode, ctx: Ctx, opts: { key?: unknown; reason?: unknown }, event: string | null): Rejection | null;
  copy(ctx: Ctx): Ctx;
  plain(value: unknown): unknown;
  fromPlain(value: unknown): unknown;
  restoredContext(raw: unknown, dropUnknown: boolean): Ctx;
  /** a template of the flow (a journal, a `template NAME`) rendered; throws when it cannot be */
  render(source: string, vars: Record<string, unknown>): string;
  /** journal `name` for one committed step (Python's `render_journal`) */
  journal(name: string, entry: Entry, ctx: Ctx): string;
}

function envOf(scope: StepScope, limits: Limits, targetType: (path: readonly string[]) => Type, effects: ReadonlySet<string>): Env {
  const config = scope.config;
  return newEnv({
    limits,
    active: (name) => {
      for (const s of config) if (s.name === name) return true;
      return false;
    },
    eventName: scope.event,
    budget: scope.outputs.budget,
    effects: scope.outputs.effects,
    raised: scope.outputs.raised,
    scheduled: scope.outputs.scheduled,
    targetType,
    declaredEffects: effects,
  });
}

function pythonType(v: unknown): string {
  if (typeof v === "number") return Number.isInteger(v) ? "int" : "float";
  if (typeof v === "boolean") return "bool";
  if (Array.isArray(v)) return "list";
  if (v === null) return "NoneType";
  return typeof v === "object" ? "dict" : typeof v;
}

export function makeExec(m: Machine, flags: { eventless: boolean; limits: Limits }): Semantics {
  const limits = flags.limits;
  const types = TypeSystem.of(m.flow, limits);
  const contextFields: Field[] = types.fields(m.flow.context, "context");
  const contextType = fieldsType("context", contextFields);
  const targetType = targetTypeOf(contextFields);
  const effects = new Set(m.flow.effects.map((e) => e.name));
  const lowered = m.flow.lowered;
  const render = (source: string, vars: Record<string, unknown>): string => renderSource(source, lowered, vars, limits);
  const eventTypes = new Map<string, Type>();
  const typeOf = (ev: EventDef): Type => {
    let t = eventTypes.get(ev.name);
    if (t === undefined) eventTypes.set(ev.name, (t = fieldsType(ev.name, types.fields(ev.fields, `event ${ev.name}`))));
    return t;
  };
  const scopeOf = (c: Ctx, p: unknown, state: StateNode): { c: Ctx; e: unknown; s: ReturnType<StateNode["view"]> } => ({ c, e: p, s: state.view() });
  const exec: Exec = {
    maxMicrosteps: limits.maxMicrosteps,
    eventless: flags.eventless,
    value: (node, c, p, state, scope) => evaluate(node, scopeOf(c, p, state), envOf(scope, limits, targetType, effects)),
    run: (block, c, p, state, scope) => {
      runActions(block, scopeOf(c, p, state), envOf(scope, limits, targetType, effects));
    },
    raisedPayload: (name, given) => {
      const ev = m.events.get(name);
      if (ev === undefined) throw new ExprFault(`an action raises undeclared event '${name}'`);
      try {
        return typeOf(ev).check(given ?? {});
      } catch (e) {
        if (e instanceof Invalid) throw new ExprFault(`the payload of the raised event ${name} does not fit its fields`);
        throw e;
      }
    },
    scheduledPayload: (name, given) => {
      const ev = m.events.get(name);
      if (ev === undefined) throw new ExprFault(`an action sends undeclared event '${name}'`);
      try {
        return typeOf(ev).check(given ?? {}) as Record<string, unknown> | null;
      } catch (e) {
        if (e instanceof Invalid) throw new ExprFault(`the payload of the scheduled event ${name} does not fit its fields`);
        throw e;
      }
    },
  };
  const make = (kind: string, code: string, template: string | null, rule: number | null, st: StateNode, event: string | null,
    payload: unknown, ctx: Ctx, data: Record<string, unknown> | null): Rejection =>
    new Rejection(kind, code, st.name, event, data ?? {}, () => {
      const vars = messageVariables({ kind, code, state: st.view(), event, payload: (payload ?? null) as Dict | null, context: ctx, data });
      const source = template ?? messageSource(kind, m.flow.messages);
      // A text with a brace but no markup is in no `lowered_templates`: it is its own message
      // (docs/ir.md), as Jinja2 renders it. (rejections.ts's messageText falls back to the
      // default for it; reported to tsexpr.)
      if (!hasKey(lowered, source) && !/\{[{%#]/.test(source) && !source.endsWith("\n")) return source.trim();
      return messageText(kind, source, vars, lowered, limits);
    }, rule);
  const journals = new Map(m.flow.journals.map((j) => [j.name, j.template]));
  const sem: Semantics = {
    exec,
    limits,
    render,
    journal(name, entry, ctx) {
      const source = journals.get(name);
      if (source === undefined) throw new Error(`the flow has no journal '${name}'`);
      const target = m.states.get(entry.target);
      return render(source, {
        seq: entry.seq, at: new TemplateTime(entry.at), kind: entry.kind, source: entry.source, target: entry.target,
        event: entry.event === null ? null : new TemplateEvent(entry.event, (entry.payload ?? null) as Dict | null),
        payload: entry.payload ?? null, reason: entry.reason, via: [...entry.via], leaves: [...leavesAfter(entry)],
        state: target === undefined ? null : target.view(), context: ctx,
      });
    },
    startContext(given) {
      try {
        return { ok: true, value: initialContext(contextType, given, { limits }) };
      } catch (e) {
        if (e instanceof InvalidWithFeedback) {
          return { ok: false, rejection: make("invalid_context", "invalid_context", null, null, m.initial, null, null, {}, e.feedback) };
        }
        throw e;
      }
    },
    checkPayload(st, ev, payload, ctx) {
      try {
        // (Python's `if payload:`: an empty list or text counts as no payload)
        return { ok: true, value: checkPayload(typeOf(ev), pyTruthy(payload) ? payload : {}, { event: ev.name, limits }) };
      } catch (e) {
        if (e instanceof InvalidWithFeedback) {
          return { ok: false, rejection: make("invalid_payload", "invalid_payload", null, null, st, ev.name, null, ctx, e.feedback) };
        }
        throw e;
      }
    },
    emptyPayload(ev) {
      try {
        return typeOf(ev).check({});
      } catch {
        return undefined;
      }
    },
    rejection: (kind, st, event, payload, ctx, data) => make(kind, kind, null, null, st, event, payload, ctx, data),
    refusal(kind, code, template, data, rule, dataState, event, p, ctx, where, reportState) {
      let value: Record<string, unknown> | null = null;
      if (data !== null) {
        try {
          const scope: StepScope = { config: new Set(), event, outputs: newOutputs() };
          value = copyJson(evaluate(data, scopeOf(ctx, p, dataState), envOf(scope, limits, targetType, effects)) as Record<string, unknown>);
        } catch (exc) {
          return sem.fault(exc, where, reportState ?? dataState, event, p, ctx);
        }
      }
      return make(kind, code, template, rule, reportState ?? dataState, event, p, ctx, value);
    },
    refused(rule, payload, st, event, ctx, scope) {
      const t = rule.def;
      let data: Record<string, unknown> | null = null;
      try {
        if (t.data !== null) data = copyJson(exec.value(t.data, copyJson(ctx), payload, rule.source, scope) as Record<string, unknown>);
      } catch (exc) {
        return sem.fault(exc, `the data of ${rule.describe()}`, st, event, payload, ctx);
      }
      return make("reject", t.code ?? "reject", t.message, rule.index, st, event, payload, ctx, data);
    },
    fault(exc, where, st, event, p, ctx) {
      let detail: string;
      if (exc instanceof ExprFault || exc instanceof LimitExceeded) detail = describeFault(exc);
      else if (exc instanceof RangeError && exc.message.includes("call stack")) detail = "the value is nested too deeply";
      else throw exc;
      const kind = exc instanceof LimitExceeded ? "limit_exceeded" : "expression_error";
      return make(kind, kind, null, null, st, event, p, ctx, { where, detail });
    },
    badArgument(st, ctx, opts, event) {
      for (const [name, value] of [["key", opts.key], ["reason", opts.reason]] as const) {
        if (value === undefined || value === null) continue;
        let problem: string | null;
        if (typeof value !== "string") problem = `expected a string, got '${pythonType(value)}'`;
        else if (value.length > limits.maxArgument) problem = `${value.length.toLocaleString("en-US")} characters; at most ${limits.maxArgument.toLocaleString("en-US")}`;
        else problem = textProblem(value);
        if (problem === null) continue;
        const ev = event !== null && textProblem(event) === null ? event : null;
        return make("invalid_argument", "invalid_argument", null, null, st, ev, null, ctx, { argument: name, problem });
      }
      return null;
    },
    copy: (ctx) => copyJson(ctx),
    plain: (value) => toPlain(value),
    fromPlain: (value) => fromPlain(value),
    restoredContext(raw, dropUnknown) {
      if (typeof raw !== "object" || raw === null || Array.isArray(raw)) throw new SnapshotError("the snapshot's context is not an object");
      let given = fromPlain(raw) as Ctx;
      if (dropUnknown) given = Object.fromEntries(Object.entries(given).filter(([k]) => contextFields.some((f) => f.name === k)));
      try {
        return contextType.check(given) as Ctx;
      } catch (e) {
        if (!(e instanceof Invalid)) throw e;
        const issues = report(contextType, given, "", undefined, limits);
        throw new SnapshotError(`the snapshot's context does not fit the flow: ${JSON.stringify(issues)}`);
      }
    },
  };
  return sem;
}
