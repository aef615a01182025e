// A flow as tools for an LLM, in the shapes of MCP, OpenAI and Anthropic: the equivalent of
// the Python runtime's `FlowTools` (runtime/tools.py), with the same names, descriptions and
// schemas. One tool per event (its payload's fields as arguments, beside `instance_id` and an
// optional `request_id`), `start`, `status`, `history`, and `goto` / `back` where the flow has
// direct / backward edges. With several flows every name starts with the flow's name.
import type { Instance } from "./instance.js";
import type { Machine } from "./machine.js";
import type { FieldDef, FlowDef, StateDef } from "./ir.js";
import { strRepr } from "./values.js";
import { contextSchema, eventSchema } from "./schema.js";
import type { JsonSchema } from "./schema.js";
import { strictSchema } from "./strict.js";

export type ToolOp = "start" | "status" | "history" | "event" | "goto" | "back";

export const HANDLE = "instance_id";
export const REQUEST_ID = "request_id";
export const FORCE = "force";
/** Tools that only read: always allowed on an existing instance. */
export const READ_OPS: ReadonlySet<ToolOp> = new Set(["status", "history"]);

const FORCE_ARGUMENT: JsonSchema = {
  type: "boolean",
  default: false,
  description:
    "true to move along a backward edge (a step back in the process); without it backward moves are refused.",
};
const HANDLE_SCHEMA: JsonSchema = {
  type: "string",
  description: "The instance to act on: the instance_id that `start` returned.",
};
const REQUEST_ID_SCHEMA: JsonSchema = {
  type: "string",
  description: "Optional. An id for this call: a retry with the same request_id runs once and returns the first result.",
};

/** One tool. `backward`: an event tool whose event some rule takes backwards (`on E -> X
 * back`), which takes a `force` argument, the consent a backward move needs. */
export class Tool {
  constructor(
    readonly name: string,
    readonly flow: string,
    readonly op: ToolOp,
    readonly description: string,
    readonly inputSchema: JsonSchema,
    readonly event: string | null = null,
    readonly backward = false,
  ) {}

  get readOnly(): boolean {
    return READ_OPS.has(this.op);
  }

  /** The MCP `Tool`, as in `tools/list`. */
  mcp(): JsonSchema {
    return {
      name: this.name,
      description: this.description,
      inputSchema: structuredClone(this.inputSchema),
      annotations: { readOnlyHint: this.readOnly, destructiveHint: false, idempotentHint: this.readOnly, openWorldHint: false },
    };
  }

  /** A tool of Anthropic's Messages API. */
  anthropic(): JsonSchema {
    return { name: this.name, description: this.description, input_schema: structuredClone(this.inputSchema) };
  }

  /** A function tool of OpenAI's Chat Completions API (strict mode by default). */
  openai(strict = true): JsonSchema {
    const parameters = strict ? strictSchema(this.inputSchema) : structuredClone(this.inputSchema);
    return { type: "function", function: { name: this.name, description: this.description, parameters, strict } };
  }
}

/** The tools of one or more flows (the newest version given of each). Throws an Error when
 * two tools would share a name. */
export class FlowTools {
  readonly flows: ReadonlyMap<string, Machine>;
  readonly prefixed: boolean;
  readonly tools: readonly Tool[];
  private readonly byName: ReadonlyMap<string, Tool>;

  constructor(flows: Iterable<Machine>, opts: { prefix?: boolean } = {}) {
    const newest = new Map<string, Machine>();
    for (const flow of flows) {
      const seen = newest.get(flow.name);
      if (seen === undefined || flow.version > seen.version) newest.set(flow.name, flow);
    }
    if (newest.size === 0) throw new Error("no flow to make tools of");
    this.flows = newest;
    this.prefixed = opts.prefix ?? newest.size > 1;
    const tools = [...newest.values()].flatMap((flow) => this.flowTools(flow));
    const byName = new Map<string, Tool>();
    for (const tool of tools) {
      const other = byName.get(tool.name);
      if (other !== undefined) {
        const hint = this.prefixed ? "" : "; serve the flow with prefixed tool names";
        throw new Error(`two tools would be called \`${tool.name}\`: ${what(other)} and ${what(tool)}${hint}`);
      }
      byName.set(tool.name, tool);
    }
    this.tools = tools;
    this.byName = byName;
  }

  get(name: string): Tool | undefined {
    return this.byName.get(name);
  }

  names(): string[] {
    return this.tools.map((t) => t.name);
  }

  tool(flow: string, op: ToolOp, event: string | null = null): Tool | undefined {
    return this.tools.find((t) => t.flow === flow && t.op === op && t.event === event);
  }

  mcp(): JsonSchema[] {
    return this.tools.map((t) => t.mcp());
  }

  openai(strict = true): JsonSchema[] {
    return this.tools.map((t) => t.openai(strict));
  }

  anthropic(): JsonSchema[] {
    return this.tools.map((t) => t.anthropic());
  }

  /** The tools `instance` may be called with now: the events it accepts, the readers, `goto`
   * (its targets narrowed to those reachable now) and `back` where the state has a backward
   * edge; only the readers once it is final. */
  forInstance(instance: Instance): Tool[] {
    const flow = instance.machine.name;
    const ir = this.flows.get(flow)?.flow;
    const accepted = new Set(instance.acceptedEvents().map((e) => e.name));
    const out: Tool[] = [];
    for (const t of this.tools) {
      if (t.flow !== flow || t.op === "start") continue;
      if (t.op === "event" && !accepted.has(t.event ?? "")) continue;
      if (t.op === "goto") {
        const targets = instance.allowedTargets({ force: true });
        if (targets.length === 0) continue;
        out.push(narrowTargets(t, targets));
        continue;
      }
      if (t.op === "back" && (ir === undefined || !hasBackwardEdge(ir, instance))) continue;
      out.push(t);
    }
    return out;
  }

  /** The names of the tools that may change `instance` now (the readers left out). */
  allowedNames(instance: Instance): string[] {
    return this.forInstance(instance).filter((t) => !t.readOnly).map((t) => t.name);
  }

  private toolName(flow: Machine, base: string): string {
    return this.prefixed ? `${flow.name}_${base}` : base;
  }

  private flowTools(flow: Machine): Tool[] {
    const ir = flow.flow;
    const title = strRepr(ir.title ?? flow.name);
    const tools = [
      new Tool(
        this.toolName(flow, "start"), flow.name, "start",
        `Start a new instance of the flow ${title}. \`context\` is its initial context. The result carries its instance_id: pass it to every other tool.`,
        args(
          {
            [HANDLE]: {
              type: "string",
              description: "Optional. The id to give the new instance (a key of the host's, such as a session id); by default a new one.",
            },
            context: described(startSchema(ir), "The initial context: only the fields listed here may be given (the others start at their defaults)."),
          },
          ["context"],
          { handle: false },
        ),
      ),
      new Tool(this.toolName(flow, "status"), flow.name, "status",
        `The current state of an instance of ${title}: its state, the state's meta, the context, and the tools it accepts now.`,
        args({}, [], { requestId: false })),
      new Tool(this.toolName(flow, "history"), flow.name, "history",
        `Every step an instance of ${title} has taken, oldest first.`, args({}, [], { requestId: false })),
    ];
    for (const name of toolEvents(ir)) tools.push(this.eventTool(flow, name, title));
    const moves = this.moveTools(flow, title);
    return [...tools, ...moves];
  }

  private eventTool(flow: Machine, name: string, title: string): Tool {
    const ir = flow.flow;
    const states = statesAccepting(ir, name);
    const where = states.length > 0 ? ` Accepted in: ${states.join(", ")}.` : "";
    const schema = eventSchema(ir, name);
    const fields = { ...(schema.properties as Record<string, JsonSchema>) };
    const backward = ir.transitions.some((t) => t.back && t.event === name && t.kind === "event");
    for (const reserved of [HANDLE, REQUEST_ID, ...(backward ? [FORCE] : [])]) {
      if (reserved in fields) {
        throw new Error(`event \`${name}\` of ${flow.name} has a field \`${reserved}\`, which its tool uses for itself`);
      }
    }
    const description =
      `Send the event \`${name}\` to an instance of ${title}.${where} The result gives the new state and the tools ` +
      "accepted next; a refusal says why and what is allowed instead.";
    const properties = backward ? { ...fields, [FORCE]: FORCE_ARGUMENT } : fields;
    return new Tool(this.toolName(flow, name), flow.name, "event", description, args(properties, schema.required as string[]), name, backward);
  }

  private moveTools(flow: Machine, title: string): Tool[] {
    const out: Tool[] = [];
    const transitions = flow.flow.transitions;
    const direct = transitions.filter((t) => t.kind === "direct" && t.target !== null && t.target !== "");
    if (direct.length > 0) {
      const targets = [...new Set(direct.map((t) => String(t.target)))].sort();
      const properties: Record<string, JsonSchema> = {
        target: { type: "string", enum: targets, description: "The state to go to." },
      };
      if (direct.some((t) => t.back)) properties[FORCE] = FORCE_ARGUMENT;
      out.push(new Tool(this.toolName(flow, "goto"), flow.name, "goto",
        `Move an instance of ${title} to another state along a direct edge. Results list the targets reachable now.`,
        args(properties, ["target"])));
    }
    if (transitions.some((t) => t.back && t.target !== null && t.target !== "")) {
      out.push(new Tool(this.toolName(flow, "back"), flow.name, "back",
        `Move an instance of ${title} back to the state it came from (along a backward edge).`, args({}, [])));
    }
    return out;
  }
}

/** A context field with its marks (`input`: a caller may set it at start; `hidden`: a model
 * may not read it), as the IR writes them. */
type MarkedField = FieldDef & { input?: boolean; hidden?: boolean };

function marked(ir: FlowDef): MarkedField[] {
  return ir.context;
}

/** The context fields a caller may give at start through a tool (marked `input`). */
export function inputFields(ir: FlowDef): string[] {
  return marked(ir).filter((f) => f.input === true).map((f) => f.name);
}

/** The context fields a model may not read (marked `hidden`). */
export function hiddenFields(ir: FlowDef): Set<string> {
  return new Set(marked(ir).filter((f) => f.hidden === true).map((f) => f.name));
}

/** `context` without the fields marked `hidden`. */
export function visibleContext(ir: FlowDef, context: Record<string, unknown>): Record<string, unknown> {
  const hidden = hiddenFields(ir);
  return Object.fromEntries(Object.entries(context).filter(([k]) => !hidden.has(k)));
}

/** The schema of the `context` a `start` tool takes: the `input` fields only. */
export function startSchema(ir: FlowDef): JsonSchema {
  const schema = contextSchema(ir);
  const allowed = new Set(inputFields(ir));
  const props = schema.properties as Record<string, JsonSchema>;
  schema.properties = Object.fromEntries(Object.entries(props).filter(([k]) => allowed.has(k)));
  schema.required = (schema.required as string[]).filter((r) => allowed.has(r));
  schema.additionalProperties = false;
  return schema;
}

/** The `done.state.*` events the runtime raises for its compound and parallel states. */
export function internalEvents(ir: FlowDef): Set<string> {
  const parents = new Set(ir.states.map((s) => s.parent).filter((p): p is string => p !== null));
  return new Set(ir.states.filter((s) => parents.has(s.name)).map((s) => `done.state.${s.name}`));
}

/** The events that are tools: those a caller may send (not `internal` ones, nor the
 * `done.state.*` events the runtime raises). */
export function toolEvents(ir: FlowDef): string[] {
  const internal = internalEvents(ir);
  return ir.events.filter((e) => !e.internal && !internal.has(e.name)).map((e) => e.name);
}

/** Whether the instance's current state has a backward edge (what `back` could take). */
export function hasBackwardEdge(ir: FlowDef, instance: Instance): boolean {
  if (instance.isFinal) return false;
  return ir.transitions.some((t) => t.back && t.source === instance.state && t.target !== null && t.target !== "");
}

function what(tool: Tool): string {
  return tool.event !== null ? `the event \`${tool.event}\` of ${tool.flow}` : `${tool.flow}'s ${tool.op}`;
}

function ancestors(ir: FlowDef, state: StateDef): StateDef[] {
  const out: StateDef[] = [];
  let parent = state.parent;
  while (parent !== null) {
    const found = ir.states.find((s) => s.name === parent);
    if (found === undefined) break;
    out.push(found);
    parent = found.parent;
  }
  return out;
}

/** The leaves where some rule takes `event` (a rule of a compound or parallel state counts in
 * each leaf under it), written with the leaf's title and its region. */
function statesAccepting(ir: FlowDef, event: string): string[] {
  const sources = new Set(ir.transitions.filter((t) => t.kind === "event" && t.event === event).map((t) => t.source));
  const out: string[] = [];
  for (const state of ir.states) {
    if (!["normal", "final"].includes(state.kind)) continue;
    const around = ancestors(ir, state);
    if (!sources.has(state.name) && !around.some((a) => sources.has(a.name))) continue;
    const text = state.title === null ? state.name : `${state.name} (${strRepr(state.title)})`;
    const region = around.find((a) => a.parent !== null && ir.states.find((s) => s.name === a.parent)?.kind === "parallel");
    out.push(region === undefined ? text : `${text} in the region ${region.name}`);
  }
  return out;
}

function described(schema: JsonSchema, text: string): JsonSchema {
  const out = Object.fromEntries(Object.entries(schema).filter(([k]) => k !== "title"));
  out.description = text;
  return out;
}

function args(
  properties: Record<string, unknown>,
  required: string[],
  opts: { handle?: boolean; requestId?: boolean } = {},
): JsonSchema {
  const props: Record<string, unknown> = {};
  const req: string[] = [];
  if (opts.handle !== false) {
    props[HANDLE] = { ...HANDLE_SCHEMA };
    req.push(HANDLE);
  }
  Object.assign(props, structuredClone(properties));
  req.push(...required);
  if (opts.requestId !== false) props[REQUEST_ID] = { ...REQUEST_ID_SCHEMA };
  return { type: "object", properties: props, required: req, additionalProperties: false };
}

function narrowTargets(tool: Tool, targets: string[]): Tool {
  const schema = structuredClone(tool.inputSchema);
  const target = (schema.properties as Record<string, JsonSchema>).target as JsonSchema;
  target.enum = (target.enum as string[]).filter((t) => targets.includes(t));
  return new Tool(tool.name, tool.flow, tool.op, tool.description, schema, tool.event);
}
