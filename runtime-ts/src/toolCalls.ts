// Tool calls on instances kept in memory: a call in, a result the model can act on out. The
// equivalent of runtime/tool_calls.py's `ToolDispatcher` (which runs them on a store), with
// the same results: on success the new state, its title and meta, `final`, the tools allowed
// now; on a refusal the runtime's rejection and what is allowed instead; on bad arguments the
// field-level feedback. A retried call with the same `request_id` runs once.
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { Instance, KEYS_KEPT } from "./instance.js";
import type { Clock } from "./clock.js";
import type { Machine } from "./machine.js";
import { StepResult } from "./history.js";
import type { Outcome } from "./outcome.js";
import { FlowTools, FORCE, HANDLE, REQUEST_ID, inputFields, visibleContext } from "./tools.js";
import type { Tool } from "./tools.js";
import { fromStrict } from "./strict.js";
import type { Json } from "./toolFeedback.js";
import { Problems, SHOWN_DEPTH, take, feedback, handleProblem, invalidHandle, issue, shallow, under, unknownInstance } from "./toolFeedback.js";
import { strRepr, toPlain } from "./values.js";
import { msToIso } from "./clock.js";
import { views } from "./toolViews.js";

/** The answer to one tool call; `data` is what the model reads (as `text()`). */
export class ToolResult {
  constructor(
    readonly isError: boolean,
    readonly data: Json,
  ) {}

  text(): string {
    return JSON.stringify(this.data, null, 2);
  }

  /** An MCP `CallToolResult`. */
  mcp(): { content: { type: "text"; text: string }[]; structuredContent: Json; isError: boolean } {
    return { content: [{ type: "text", text: this.text() }], structuredContent: this.data, isError: this.isError };
  }

  anthropic(toolUseId: string): Json {
    return { type: "tool_result", tool_use_id: toolUseId, content: this.text(), is_error: this.isError };
  }

  openai(toolCallId: string): Json {
    return { role: "tool", tool_call_id: toolCallId, content: this.text() };
  }
}

const START_IDS = "5b1f8a3e-3c1d-4d0e-9a57-7f2a0c6e4b11";

/** The id of the instance a `start` of `flow` with this `request_id` (and no `instance_id`)
 * creates: the same at every retry (the UUID version 5 Python's `start_id` gives). */
export function startId(flow: string, requestId: string): string {
  const namespace = Buffer.from(START_IDS.replace(/-/g, ""), "hex");
  const digest = createHash("sha1").update(namespace).update(`${flow}\0${requestId}`, "utf8").digest().subarray(0, 16);
  digest[6] = ((digest[6] ?? 0) & 0x0f) | 0x50;
  digest[8] = ((digest[8] ?? 0) & 0x3f) | 0x80;
  return digest.toString("hex");
}

/** A refused id or key, thrown where it is met and answered by `call`. */
class HandleRefused extends Error {
  constructor(readonly data: Json) {
    super(String(data.message));
  }
}

function checkHandle(field: string, value: string): void {
  const problem = handleProblem(value);
  if (problem !== null) throw new HandleRefused(invalidHandle(field, value, problem));
}

export interface DispatcherOptions {
  /** the tools (default: those of every machine given) */
  tools?: FlowTools;
  /** more for a `status` result, given the instance's id */
  onStatus?: (instanceId: string) => Json;
  /** the clock new instances run on (default: each machine's) */
  clock?: Clock;
}

/** An instance the dispatcher keeps: with its incarnation (64 random bits, telling apart
 * instances that shared an id over time, as in effect ids) and the context it was started
 * with (which its history's start row records). */
export interface Kept {
  readonly instance: Instance;
  readonly incarnation: string;
  readonly startContext: Json;
  /** the effects of the steps taken under a request_id, shown again when it is retried */
  readonly keyed: Map<string, Json[]>;
}

/** Runs calls of `tools` on instances it keeps in memory (`instances`). */
export class ToolDispatcher {
  readonly tools: FlowTools;
  readonly instances = new Map<string, Kept>();
  private readonly onStatus: ((instanceId: string) => Json) | undefined;
  private readonly clock: Clock | undefined;

  constructor(machines: Iterable<Machine>, opts: DispatcherOptions = {}) {
    this.tools = opts.tools ?? new FlowTools(machines);
    this.onStatus = opts.onStatus;
    this.clock = opts.clock;
  }

  /** Run the call. `strict`: arguments written against the OpenAI strict-mode schema. */
  call(name: string, args: unknown = null, opts: { strict?: boolean } = {}): ToolResult {
    let result: ToolResult;
    try {
      result = this.run(name, args, opts.strict === true);
    } catch (error) {
      if (!(error instanceof HandleRefused)) throw error;
      result = new ToolResult(true, error.data);
    }
    // Plain JSON (as MCP and JSON.stringify take it), cut where it nests too deeply to show.
    return new ToolResult(result.isError, shallow(toPlain(result.data) as Json, SHOWN_DEPTH));
  }

  private run(name: string, given: unknown, strict: boolean): ToolResult {
    const tool = this.tools.get(name);
    if (tool === undefined) {
      return refused({ ok: false, error: "unknown_tool", message: `There is no tool called ${strRepr(name)}.`, tools: this.tools.names() });
    }
    const raw = given ?? {};
    if (typeof raw !== "object" || Array.isArray(raw)) return refused(feedback(tool, [issue("", raw, "an object")]));
    const args = { ...((strict ? fromStrict(tool.inputSchema, raw) : raw) as Json) };
    if (tool.op === "start") return this.start(tool, args);
    const problems = new Problems();
    const instanceId = problems.string(args, HANDLE, true);
    const requestId = problems.string(args, REQUEST_ID, false);
    const force = tool.op === "event" && tool.backward ? problems.boolean(args, FORCE) : false;
    const rest = tool.op === "event" ? args : this.ownArguments(tool, args, problems);
    if (problems.any || instanceId === null) return refused(problems.feedback(tool));
    checkHandle(HANDLE, instanceId);
    const kept = this.instances.get(instanceId);
    if (kept === undefined) return refused(unknownInstance(instanceId, this.startName(tool)));
    const instance = kept.instance;
    if (instance.machine.name !== tool.flow) {
      const message = `Instance ${strRepr(instanceId)} runs the flow ${strRepr(instance.machine.name)}; ${tool.name} is a tool of ${strRepr(tool.flow)}.`;
      return refused({ ok: false, error: "wrong_flow", message, [HANDLE]: instanceId });
    }
    if (tool.op === "status") return new ToolResult(false, this.status(instanceId, instance));
    if (tool.op === "history") return new ToolResult(false, history(instanceId, kept));
    if (requestId !== null) checkHandle(REQUEST_ID, requestId);
    const key = { key: requestId };
    let out: Outcome;
    if (tool.op === "event") out = instance.send(tool.event ?? "", rest, { ...key, force });
    else if (tool.op === "goto") out = instance.goto(String(rest.target), { ...key, force: rest.force === true });
    else out = instance.back({ ...key, force: true }); // asking to move back is the consent it needs
    return this.answer(tool, kept, out, requestId);
  }

  private startName(tool: Tool): string {
    return this.tools.tool(tool.flow, "start")?.name ?? "start";
  }

  private start(tool: Tool, args: Json): ToolResult {
    const problems = new Problems();
    const chosen = problems.string(args, HANDLE, false);
    const requestId = problems.string(args, REQUEST_ID, false);
    const context = take(args, "context") ?? {};
    const machine = this.machine(tool.flow);
    if (typeof context !== "object" || Array.isArray(context)) {
      problems.invalid.push(issue("context", context, "an object"));
    } else {
      // Least privilege: a caller sets only the fields the flow marks `input`.
      const allowed = new Set(inputFields(machine.flow));
      problems.unknown.push(...Object.keys(context).sort().filter((k) => !allowed.has(k)).map((k) => `context.${k}`));
    }
    problems.unknown.push(...Object.keys(args).sort());
    if (problems.any) return refused(problems.feedback(tool));
    if (requestId !== null) checkHandle(REQUEST_ID, requestId);
    const instanceId = chosen ?? (requestId !== null ? startId(tool.flow, requestId) : randomUUID().replace(/-/g, ""));
    checkHandle(HANDLE, instanceId);
    const existing = this.instances.get(instanceId);
    if (existing !== undefined) return this.startedBefore(tool, instanceId, existing.instance, requestId);
    const clock = this.clock === undefined ? {} : { clock: this.clock };
    const started = machine.start({ context: context as Json, id: instanceId, ...clock });
    if (!(started instanceof Instance)) return refused(under("context", started.toJSON()));
    const incarnation = randomBytes(8).toString("hex");
    this.instances.set(instanceId, { instance: started, incarnation, startContext: { ...(context as Json) }, keyed: new Map() });
    const view = views(this.tools).view(started);
    // (the start's effects are keyed by the instance's seq after it: a tree's children's
    // starts are entries of its history)
    const effects = effectsOf(instanceId, incarnation, started.seq, started.startEffects);
    if (effects.length > 0) view.effects = effects;
    return new ToolResult(false, view);
  }

  private startedBefore(tool: Tool, instanceId: string, existing: Instance, requestId: string | null): ToolResult {
    if (requestId === null || existing.machine.name !== tool.flow) {
      return refused({
        ok: false,
        error: "instance_exists",
        message: `There is already an instance ${strRepr(instanceId)}: act on it, or start another under a new instance_id.`,
        [HANDLE]: instanceId,
      });
    }
    // A retried start: the instance its first attempt created.
    return new ToolResult(false, { ...views(this.tools).view(existing), replayed: true });
  }

  private machine(flow: string): Machine {
    const found = this.tools.flows.get(flow);
    if (found === undefined) throw new Error(`no flow ${flow}`);
    return found;
  }

  private ownArguments(tool: Tool, args: Json, problems: Problems): Json {
    const own: Json = {};
    const properties = tool.inputSchema.properties as Record<string, Json>;
    if (tool.op === "goto") {
      const target = problems.string(args, "target", true);
      const allowed = (properties.target?.enum ?? []) as string[];
      if (target !== null && !allowed.includes(target)) problems.invalid.push(issue("target", target, `one of ${allowed.join(", ")}`));
      own.target = target;
      if ("force" in properties) {
        const force = "force" in args ? take(args, "force") : false; // null is not false here
        if (typeof force !== "boolean") problems.invalid.push(issue("force", force, "true or false"));
        own.force = force === true;
      }
    }
    problems.unknown.push(...Object.keys(args).sort());
    return own;
  }

  private status(instanceId: string, instance: Instance): Json {
    const view = { ...views(this.tools).view(instance), context: visibleContext(instance.machine.flow, instance.context) };
    if (this.onStatus !== undefined) Object.assign(view, this.onStatus(instanceId));
    return view;
  }

  private answer(tool: Tool, kept: Kept, out: Outcome, requestId: string | null): ToolResult {
    const instance = kept.instance;
    const instanceId = instance.id ?? "";
    const shown = views(this.tools);
    if (out instanceof StepResult) {
      const view = shown.view(instance);
      const effects = out.replayed ? (kept.keyed.get(requestId ?? "") ?? []) : effectsOf(instanceId, kept.incarnation, out.seq, out.effects);
      if (!out.replayed && requestId !== null && effects.length > 0) remember(kept.keyed, requestId, effects);
      if (effects.length > 0) view.effects = effects;
      if (out.replayed) view.replayed = true;
      return new ToolResult(false, view);
    }
    const data: Json = { ...out.toJSON(), [HANDLE]: instanceId };
    if (data.kind === "invalid_payload" && tool.name !== tool.event) {
      // The runtime's advice names the event; the model knows the tool.
      data.action = `Call ${tool.name} again with corrected arguments. Unknown fields may be typos.`;
    }
    // A wrong tool: say which are right (a bad payload needs only its feedback).
    if (data.kind !== "invalid_payload") Object.assign(data, shown.allowed(instance, true));
    return refused(data);
  }
}

/** Keep a step's effects under its request_id, as many as the instance keeps keys. */
function remember(keyed: Map<string, Json[]>, requestId: string, effects: Json[]): void {
  keyed.set(requestId, effects);
  const oldest = keyed.keys().next();
  if (keyed.size > KEYS_KEPT && oldest.done !== true) keyed.delete(oldest.value);
}

function refused(data: Json): ToolResult {
  return new ToolResult(true, data);
}

/** The effects a committed step emitted, each with the id its outbox delivery carries. */
export function effectsOf(instanceId: string, incarnation: string, seq: number, effects: readonly { effect: string; payload: unknown }[]): Json[] {
  return effects.map((e, i) => ({ id: `${instanceId}/${incarnation}/${seq}/${i}`, effect: e.effect, fields: e.payload }));
}

/** The history as a store's rows give it; the start row records the context given. */
function history(instanceId: string, kept: Kept): Json {
  const instance = kept.instance;
  return {
    ok: true,
    [HANDLE]: instanceId,
    state: instance.state,
    history: instance.history.map((h) => ({
      seq: h.seq,
      at: typeof h.at === "number" ? msToIso(h.at) : h.at,
      from: h.source,
      to: h.target,
      trigger: h.event ?? h.kind,
      payload: h.seq === 0 && h.kind === "start" && h.payload === null ? { context: kept.startContext } : h.payload,
    })),
  };
}
