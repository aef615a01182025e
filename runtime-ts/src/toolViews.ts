// What a tool result shows of an instance: its state, title, meta, whether it is final, each
// active leaf of a statechart, and the tools allowed now (runtime/tool_calls.py `_view`,
// `_allowed`, `active_leaves`).
import type { FlowDef } from "./ir.js";
import type { Instance } from "./instance.js";
import type { FlowTools, Tool } from "./tools.js";
import { HANDLE, REQUEST_ID } from "./tools.js";
import type { Json } from "./toolFeedback.js";

const ATOMIC = new Set(["normal", "final", "choice"]);

function stateOf(flow: FlowDef, name: string): { title: string; meta: Json; atomic: boolean } {
  const found = flow.states.find((s) => s.name === name);
  return { title: found?.title ?? name, meta: { ...(found?.meta ?? {}) }, atomic: found !== undefined && ATOMIC.has(found.kind) };
}

/** A statechart's active leaves (one per region of a parallel state), with title and meta. */
export function activeLeaves(instance: Instance): Json[] {
  const flow = instance.machine.flow;
  return instance.configuration
    .map((name) => ({ name, ...stateOf(flow, name) }))
    .filter((s) => s.atomic)
    .map((s) => ({ state: s.name, title: s.title, meta: s.meta }));
}

/** A tool's arguments without the handle and the request id every tool takes. */
export function ownSchema(tool: Tool): Json {
  const schema = tool.inputSchema;
  const props = Object.fromEntries(
    Object.entries(schema.properties as Json).filter(([k]) => k !== HANDLE && k !== REQUEST_ID),
  );
  return {
    type: "object",
    properties: props,
    required: (schema.required as string[]).filter((r) => r in props),
    additionalProperties: false,
  };
}

/** The views of instances under `tools`. */
export function views(tools: FlowTools): {
  view: (instance: Instance) => Json;
  allowed: (instance: Instance, withArguments: boolean) => Json;
} {
  const allowed = (instance: Instance, withArguments: boolean): Json => {
    const changing = tools.forInstance(instance).filter((t) => !t.readOnly);
    const out: Json = {
      allowed_tools: withArguments ? changing.map((t) => ({ name: t.name, arguments: ownSchema(t) })) : changing.map((t) => t.name),
    };
    if (tools.tool(instance.machine.name, "goto") !== undefined) out.goto_targets = instance.allowedTargets();
    return out;
  };
  const view = (instance: Instance): Json => {
    const state = stateOf(instance.machine.flow, instance.state);
    const out: Json = {
      ok: true,
      [HANDLE]: instance.id,
      state: instance.state,
      title: state.title,
      meta: state.meta,
      final: instance.isFinal,
    };
    if (instance.configuration.length > 1) out.active = activeLeaves(instance);
    return { ...out, ...allowed(instance, false) };
  };
  return { view, allowed };
}
