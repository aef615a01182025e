// What a committed step records (a history entry) and what a step returns (`StepResult`),
// in the Python runtime's JSON shapes (`HistoryEntry.to_dict`, `StepResult.to_dict`).
import { msToIso } from "./clock.js";
import { toPlain } from "./values.js";

export type Leaves = readonly [readonly string[], readonly string[]] | null;

export interface Entry {
  readonly seq: number;
  /** epoch milliseconds */
  readonly at: number;
  readonly kind: string;
  readonly source: string | null;
  readonly target: string;
  readonly event: string | null;
  readonly payload: unknown;
  readonly reason: string | null;
  readonly via: readonly string[];
  /** a statechart step's active leaves before and after it, when `source` or `target`
   * does not name them (null in a flat flow) */
  readonly leaves: Leaves;
}

/** A deep copy of a JSON-like value (lists and plain objects copied; boxed values, which
 * never change, shared). */
export function copyJson<T>(value: T): T {
  if (Array.isArray(value)) return value.map(copyJson) as T;
  if (typeof value === "object" && value !== null && Object.getPrototypeOf(value) === Object.prototype) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = copyJson(v);
    return out as T;
  }
  return value;
}

export function entryJSON(e: Entry): Record<string, unknown> {
  const out: Record<string, unknown> = {
    seq: e.seq,
    at: msToIso(e.at),
    kind: e.kind,
    source: e.source,
    target: e.target,
    event: e.event,
    payload: toPlain(e.payload),
    reason: e.reason,
    via: [...e.via],
  };
  if (e.leaves !== null) {
    out.source_leaves = [...e.leaves[0]];
    out.target_leaves = [...e.leaves[1]];
  }
  return out;
}

/** The active leaves after the step (`target` alone in a flat flow). */
export function leavesAfter(e: Entry): readonly string[] {
  return e.leaves === null ? [e.target] : e.leaves[1];
}

export interface Effect {
  effect: string;
  payload: Record<string, unknown>;
}

/** A committed step (or, `replayed`, the earlier step an idempotency key names). */
/** How a step's journals are rendered: the flow's journal names, and one rendered. */
export interface Journaller {
  names: readonly string[];
  render(name: string, entry: Entry, ctx: Record<string, unknown>): string;
}

export class StepResult {
  readonly ok = true;
  private rendered = new Map<string, string>();
  /** In a tree of instances (child flows): the steps of the root that followed this one in
   * the same host call, in order: messages it took (kind `message`) and, as entries of kind
   * `child`, its children's steps (src/children.ts). Empty otherwise. */
  then: readonly StepResult[] = [];

  constructor(
    readonly entry: Entry,
    private readonly ctx: Record<string, unknown>,
    /** a statechart's configuration after the step; null in a flat flow (and a replay) */
    private readonly config: readonly string[] | null,
    /** the IR indices of the rules taken; null for a replay */
    readonly rulesTaken: readonly number[] | null,
    /** the effects its actions emitted, as collected */
    readonly fx: readonly (readonly [string, Record<string, unknown> | null])[],
    readonly replayed = false,
    private readonly journaller: Journaller | null = null,
  ) {}

  /** The journal `name` rendered for this step (rendered once, then kept). */
  journal(name: string): string {
    let text = this.rendered.get(name);
    if (text === undefined) {
      if (this.journaller === null) throw new Error(`no journal '${name}'`);
      text = this.journaller.render(name, this.entry, this.ctx);
      this.rendered.set(name, text);
    }
    return text;
  }

  /** Every journal of the flow, rendered for this step. */
  journals(): Record<string, string> {
    return Object.fromEntries((this.journaller?.names ?? []).map((name) => [name, this.journal(name)]));
  }

  get seq(): number {
    return this.entry.seq;
  }
  get from(): string | null {
    return this.entry.source;
  }
  get to(): string {
    return this.entry.target;
  }
  get kind(): string {
    return this.entry.kind;
  }
  get trigger(): string {
    return this.entry.event ?? this.entry.kind;
  }
  get context(): Record<string, unknown> {
    return copyJson(this.ctx);
  }
  get configuration(): readonly string[] {
    return this.config ?? [this.entry.target];
  }
  get effects(): Effect[] {
    return this.fx.map(([effect, payload]) => ({ effect, payload: copyJson(payload ?? {}) }));
  }

  toJSON(): Record<string, unknown> {
    const { source, target, ...rest } = entryJSON(this.entry);
    const out: Record<string, unknown> = { ok: true, from: source, to: target, ...rest, trigger: this.trigger };
    if (this.config !== null) out.configuration = [...this.config];
    if (this.replayed) out.replayed = true;
    else if (this.fx.length > 0) out.effects = toPlain(this.effects);
    return out;
  }
}
