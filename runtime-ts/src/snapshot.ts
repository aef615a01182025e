// Snapshots in the Python runtime's formats (flowc.snapshot/1, /2 when some history entry
// carries a statechart's leaves, /3 when scheduled events are pending, /4 a tree of instances): written by `Instance.snapshot()`, read by
// `Machine.restore`, interchangeable with Python's `Instance.snapshot()` / `Machine.restore`.
import { msToIso, readMs, toMs, type Clock } from "./clock.js";
import { defaultLeaves } from "./engine.js";
import { copyJson, entryJSON, type Entry, type Leaves } from "./history.js";
import { Instance } from "./instance.js";
import type { Machine } from "./machine.js";
import { textProblem } from "./limits.js";
import type { Place } from "./children.js";
import { restoreTree, snapshotInto } from "./childTree.js";
import type { Scheduled } from "./scheduled.js";
import { dueOrder, type Timer } from "./timers.js";
import { summaryOf, withAncestors, type Rule, type StateNode } from "./tree.js";

export const SNAPSHOT_FORMAT = "flowc.snapshot/2";
export const SNAPSHOT_FORMAT_1 = "flowc.snapshot/1";
/** written only when scheduled events are pending (`sends`): a runtime that does not know
 * them refuses such a snapshot rather than lose them */
export const SNAPSHOT_FORMAT_3 = "flowc.snapshot/3";
/** written only when the instance is part of a tree with children, joins or messages pending
 * (`children`, `joins`, `inbox`: src/childTree.ts) */
export const SNAPSHOT_FORMAT_4 = "flowc.snapshot/4";
const FORMATS: ReadonlySet<unknown> = new Set([SNAPSHOT_FORMAT_1, SNAPSHOT_FORMAT, SNAPSHOT_FORMAT_3, SNAPSHOT_FORMAT_4]);
const FIELDS = new Set([
  "format", "flow", "version", "hash", "id", "state", "seq", "context", "history",
  "timers", "keys", "configuration", "histories", "lineage", "retired_states", "sends",
  "children", "joins", "inbox",
]);

/** A snapshot that does not fit this machine (Python's `SnapshotError`). */
export class SnapshotError extends Error {
  override name = "SnapshotError";
}

export interface RestoreOptions {
  clock?: Clock;
  dropUnknown?: boolean;
}

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

export function writeSnapshot(inst: Instance): Json {
  const m = inst.machine;
  const entries = inst.entriesRef();
  const snap: Json = {
    format: entries.some((e) => e.leaves !== null) ? SNAPSHOT_FORMAT : SNAPSHOT_FORMAT_1,
    flow: m.name,
    version: m.version,
    hash: m.hash,
    id: inst.id,
    state: inst.state,
    seq: inst.seq,
    context: m.semantics.plain(inst.ctxRef()),
    history: entries.map((e) => m.semantics.plain(entryJSON(e))),
    timers: inst.timersRef().map(([due, t]) => ({
      due: msToIso(due), index: t.index, source: t.source.name, target: t.target?.name ?? null, after_ms: t.afterMs,
    })),
    keys: Object.fromEntries(inst.keysRef()),
  };
  const sends = inst.sendsRef();
  if (sends.length > 0) {
    snap.format = SNAPSHOT_FORMAT_3;
    snap.sends = sends.map((x) => ({ id: x.id, due: msToIso(x.due), event: x.event, payload: m.semantics.plain(copyJson(x.payload)) }));
  }
  if (m.hierarchical) {
    snap.configuration = inst.leafNames();
    snap.histories = Object.fromEntries([...inst.historiesRef()].map(([h, v]) => [h, v.map((s) => s.name)]));
  }
  if (inst.retired.length > 0) snap.retired_states = [...inst.retired].sort();
  if (inst.tree !== null) snapshotInto(inst.tree, snap);
  return snap;
}

function parse(m: Machine, snapshot: object | string): Json {
  let data: unknown = snapshot;
  if (typeof snapshot === "string") {
    try {
      data = JSON.parse(snapshot);
    } catch (e) {
      throw new SnapshotError(`the snapshot is not JSON: ${String(e).slice(0, 200)}`);
    }
  }
  if (!isObject(data)) throw new SnapshotError("a snapshot is a JSON object");
  const unknown = Object.keys(data).filter((k) => !FIELDS.has(k)).sort();
  if (unknown.length > 0) throw new SnapshotError(`the snapshot has an unknown field '${unknown[0] ?? ""}'`);
  const format = data.format ?? SNAPSHOT_FORMAT;
  if (!FORMATS.has(format)) throw new SnapshotError(`unknown snapshot format ${JSON.stringify(format)}`);
  if (data.flow !== m.name) throw new SnapshotError(`the snapshot is of flow ${JSON.stringify(data.flow)}, not '${m.name}'`);
  const version = data.version ?? m.version;
  if (typeof version !== "number" || !Number.isInteger(version) || version > m.version) {
    throw new SnapshotError(`the snapshot is of version ${JSON.stringify(version)} of ${m.name}; this machine has version ${m.version}`);
  }
  return data;
}

function optString(v: unknown): string | null {
  return typeof v === "string" ? v : null;
}

function leavesOf(h: Json): Leaves {
  const [source, target] = [h.source_leaves, h.target_leaves];
  if (source === undefined && target === undefined) return null;
  if (!Array.isArray(source) || !Array.isArray(target)) {
    throw new SnapshotError(`the snapshot's history entry ${JSON.stringify(h.seq)} has source_leaves and target_leaves that are not both lists of state names`);
  }
  return [source.map(String), target.map(String)];
}

function historyOf(m: Machine, data: Json): Entry[] {
  const raw = data.history ?? [];
  if (!Array.isArray(raw)) throw new SnapshotError("malformed snapshot history");
  let previous = -1;
  return raw.map((h: unknown) => {
    if (!isObject(h) || typeof h.seq !== "number" || typeof h.kind !== "string" || typeof h.target !== "string") {
      throw new SnapshotError("malformed snapshot history");
    }
    if (h.seq <= previous) throw new SnapshotError(`the snapshot's history is out of order: step ${h.seq} after step ${previous}`);
    previous = h.seq;
    let at: number;
    try {
      at = toMs(h.at);
    } catch (e) {
      throw new SnapshotError(`malformed snapshot history: ${String(e).slice(0, 200)}`);
    }
    return {
      seq: h.seq, at, kind: h.kind, source: optString(h.source), target: h.target, event: optString(h.event),
      payload: m.semantics.fromPlain(copyJson(h.payload ?? null)), reason: optString(h.reason),
      via: Array.isArray(h.via) ? h.via.map(String) : [], leaves: leavesOf(h),
    };
  });
}

function configurationOf(m: Machine, state: StateNode, data: Json): StateNode[] {
  // (a flat flow's configuration is its state: a `configuration` there is not read)
  const names = m.chart ? data.configuration : undefined;
  let leaves: StateNode[];
  if (names === undefined || names === null) leaves = defaultLeaves(state, m.exec);
  else {
    if (!Array.isArray(names) || names.length === 0) throw new SnapshotError("the snapshot's configuration is not a list of state names");
    leaves = names.map((name: unknown) => {
      const leaf = typeof name === "string" ? m.states.get(name) : undefined;
      if (leaf === undefined || !leaf.atomic) {
        throw new SnapshotError(`state ${JSON.stringify(name)} of the snapshot's configuration is not a leaf state of ${m.name} version ${m.version}`);
      }
      return leaf;
    });
  }
  const config = withAncestors(leaves);
  const active = new Set(config);
  for (const s of config) {
    const inside = s.regions.filter((c) => active.has(c)).length;
    if ((s.kind === "compound" && inside !== 1) || (s.kind === "parallel" && inside !== s.regions.length)) {
      throw new SnapshotError(`the snapshot's configuration is not consistent at '${s.name}'`);
    }
  }
  return config;
}

function historiesOf(m: Machine, data: Json): Map<string, StateNode[]> {
  const out = new Map<string, StateNode[]>();
  const raw = data.histories ?? {};
  if (!isObject(raw)) throw new SnapshotError("the snapshot's histories are not an object");
  for (const [h, recorded] of Object.entries(raw)) {
    if (m.states.get(h)?.history == null || !Array.isArray(recorded)) {
      throw new SnapshotError(`the snapshot records history '${h}', which is not a history state`);
    }
    const got = recorded.map((x: unknown) => (typeof x === "string" ? m.states.get(x) : undefined));
    const states = got.filter((x): x is StateNode => x !== undefined);
    if (states.length === 0 || states.length !== got.length) throw new SnapshotError(`the snapshot's history '${h}' names unknown states`);
    out.set(h, states);
  }
  return out;
}

/** When the instance last entered `state` (internal `-> self` steps do not count). */
function enteredAt(history: Entry[], state: string): number {
  for (let i = history.length - 1; i >= 0; i--) {
    const e = history[i];
    if (e !== undefined && e.target === state && e.source !== state) return e.at;
  }
  return history[history.length - 1]?.at ?? 0;
}

/** The snapshot's scheduled events (format /3), each of an event of this flow, soonest first. */
function sendsOf(raw: unknown, m: Machine): Scheduled[] {
  if (raw === undefined || raw === null || raw === false || (Array.isArray(raw) && raw.length === 0)) return [];
  if (!Array.isArray(raw)) throw new SnapshotError("malformed snapshot scheduled events");
  const sends = raw.map((item: unknown, n): Scheduled => {
    if (!isObject(item) || !("event" in item) || !("id" in item) || !("due" in item)) {
      throw new SnapshotError("malformed snapshot scheduled events");
    }
    const { event, id } = item;
    const payload = item.payload ?? null;
    if (typeof event !== "string" || !m.events.has(event) || typeof id !== "string") {
      throw new SnapshotError(`scheduled event ${n} of the snapshot (${JSON.stringify(event)}, id ${JSON.stringify(id)}) is not an event of ${m.name} version ${m.version}`);
    }
    if (payload !== null && !isObject(payload)) throw new SnapshotError(`scheduled event ${n} of the snapshot has a malformed payload`);
    let due: number;
    try {
      due = toMs(item.due);
    } catch (e) {
      throw new SnapshotError(`malformed snapshot scheduled events: ${String(e).slice(0, 200)}`);
    }
    return { due, id, event, payload: payload === null ? null : (m.semantics.fromPlain(copyJson(payload)) as Json) };
  });
  return sends.sort((a, b) => a.due - b.due);
}

/** Match the snapshot's timers to the timer rules of the active states: by index when the
 * rule is the same, else by target and delay; under a changed flow, rules with no timer are
 * armed from when the state was entered. */
function timersOf(rules: Rule[], raw: unknown, entered: number, armMissing: boolean, m: Machine): Timer[] {
  const found = new Map<number, number>();
  if (!Array.isArray(raw)) throw new SnapshotError("malformed snapshot timers");
  raw.forEach((item: unknown, position) => {
    if (!isObject(item)) throw new SnapshotError("malformed snapshot timers");
    const target = item.target;
    if (typeof target === "string" && !m.states.has(target)) {
      throw new SnapshotError(`a pending timer of the snapshot goes to state '${target}', which does not exist in this version of the flow (map it with a migration)`);
    }
    let due: number;
    try {
      due = toMs(item.due);
    } catch (e) {
      throw new SnapshotError(`malformed snapshot timers: ${String(e).slice(0, 200)}`);
    }
    const fits = (t: Rule): boolean => t.target !== null && t.target.name === target && t.afterMs === (item.after_ms ?? null);
    const match = rules.find((t) => t.index === item.index && fits(t)) ?? rules.find((t) => !found.has(t.index) && fits(t));
    if (match !== undefined) found.set(match.index, due);
    else if (!armMissing) {
      throw new SnapshotError(`pending timer ${position} of the snapshot (index ${JSON.stringify(item.index)}, target ${JSON.stringify(target)}, after_ms ${JSON.stringify(item.after_ms)}) matches no timer rule of the active states of the flow that wrote it`);
    }
  });
  const timers: Timer[] = rules
    .filter((t) => found.has(t.index) || armMissing)
    .map((t) => [found.get(t.index) ?? entered + (t.afterMs ?? 0), t]);
  return dueOrder(timers);
}

/** What a restored history must be: entries a store can keep (text without a NUL or a lone
 * surrogate), naming states of this flow, or of older versions of it (its retired states). */
function retiredOf(history: Entry[], data: Json, m: Machine, sameFlow: boolean): string[] {
  const raw = data.retired_states ?? [];
  if (!Array.isArray(raw) || !raw.every((n) => typeof n === "string")) {
    throw new SnapshotError("the snapshot's retired_states is not a list of state names");
  }
  const retired = new Set<string>(raw);
  for (const e of history) {
    const leaves = e.leaves ?? [[], []];
    const texts = [e.kind, e.source, e.target, e.event, e.reason, ...e.via, ...leaves[0], ...leaves[1]];
    if (texts.some((t) => t !== null && textProblem(t) !== null)) {
      throw new SnapshotError(`the snapshot's history has a bad entry at step ${e.seq}`);
    }
    for (const name of [e.source, e.target, ...e.via, ...leaves[0], ...leaves[1]]) {
      if (name === null || m.states.has(name) || retired.has(name)) continue;
      if (sameFlow) {
        throw new SnapshotError(`the snapshot's history entry at step ${e.seq} names state '${name}', which does not exist in ${m.name} version ${m.version} (field history)`);
      }
      retired.add(name);
    }
  }
  return [...retired];
}

function keysOf(data: Json, history: Entry[], m: Machine): Map<string, number> {
  const raw = data.keys ?? {};
  if (!isObject(raw)) throw new SnapshotError("malformed snapshot history: keys");
  const applied = Object.entries(raw).map(([k, v]) => [Number(v), k] as const).sort((a, b) => a[0] - b[0]);
  const recorded = new Set(history.map((e) => e.seq));
  for (const [seq, key] of applied) {
    if (textProblem(key) !== null || key.length > m.semantics.limits.maxArgument) {
      throw new SnapshotError("the snapshot has an idempotency key no store can keep");
    }
    if (!recorded.has(seq)) throw new SnapshotError(`key '${key}' names step ${seq}, which the history lacks`);
  }
  return new Map(applied.map(([seq, key]) => [key, seq]));
}

/** `place`: where a child goes in its tree (src/children.ts). */
export function restoreInstance(m: Machine, snapshot: object | string, opts: RestoreOptions, place: Place | null = null): Instance {
  const data = parse(m, snapshot);
  const stateName = data.state;
  let state = typeof stateName === "string" ? m.states.get(stateName) : undefined;
  if (state === undefined) throw new SnapshotError(`state ${JSON.stringify(stateName)} of the snapshot does not exist in ${m.name} version ${m.version}`);
  const ctx = m.semantics.restoredContext(data.context ?? {}, opts.dropUnknown === true);
  let history = historyOf(m, data);
  const last = history[history.length - 1];
  const seq = typeof data.seq === "number" ? data.seq : (last?.seq ?? 0);
  if (last !== undefined && last.seq !== seq) throw new SnapshotError(`the snapshot's seq is ${seq}, but its history ends at step ${last.seq}`);
  if (seq < 0) throw new SnapshotError(`the snapshot's seq is ${seq}`);
  const sameFlow = m.hash !== "" && data.hash === m.hash;
  const retired = retiredOf(history, data, m, sameFlow);
  const keys = keysOf(data, history, m);
  const clock = opts.clock ?? m.clock;
  if (history.length === 0) {
    history = [{ seq, at: readMs(clock), kind: "start", source: null, target: state.name, event: null, payload: null, reason: null, via: [], leaves: null }];
  }
  const config = configurationOf(m, state, data);
  state = summaryOf(config);
  const inst = new Instance(m, clock);
  inst.id = typeof data.id === "string" ? data.id : null;
  inst.load(state, config, historiesOf(m, data), ctx, seq, history);
  inst.setKeys(keys);
  inst.retired = retired;
  const rules = config.flatMap((s) => s.timers);
  inst.setTimers(timersOf(rules, data.timers ?? [], enteredAt(history, state.name), !sameFlow, m));
  inst.setSends(sendsOf(data.sends, m));
  if (m.composes) restoreTreeOf(inst, data, place);
  return inst;
}

/** Give a restored instance (or one put back: invariants.ts) its node and its children,
 * joins and inbox, as `data` (its snapshot) has them. */
export function restoreTreeOf(inst: Instance, data: Json, place: Place | null = null): void {
  restoreTree(inst, data, place, (child, snap, parent, where) => restoreInstance(child, snap, { clock: parent.clock }, where));
}
