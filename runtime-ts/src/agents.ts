// `@flowc/runtime/agents`: a flow's events as tools for an LLM (MCP, OpenAI, Anthropic shapes)
// and the dispatcher that runs their calls on instances kept in memory. A separate entry point:
// it uses node:crypto (stable ids for retried starts), which the engine itself does not need.
export { FlowTools, Tool, FORCE, HANDLE, READ_OPS, REQUEST_ID, hasBackwardEdge, hiddenFields, inputFields, internalEvents, startSchema, toolEvents, visibleContext } from "./tools.js";
export type { ToolOp } from "./tools.js";
export { fromStrict, strictSchema } from "./strict.js";
export { contextSchema, eventSchema, objectSchema, typeSchema } from "./schema.js";
export type { JsonSchema } from "./schema.js";
export { ToolDispatcher, ToolResult, effectsOf, startId } from "./toolCalls.js";
export type { DispatcherOptions } from "./toolCalls.js";
export { activeLeaves, ownSchema } from "./toolViews.js";
