import { describe, expect, it } from "vitest";
import { Machine } from "../src/index.js";
import { FlowTools, ToolDispatcher, fromStrict, startId, strictSchema } from "../src/agents.js";
import type { JsonSchema } from "../src/agents.js";
import { FakeClock } from "../src/clock.js";
import { compiledIR } from "./hostFixtures.js";

const RFP = Machine.fromJSON(compiledIR("rfp_workspace"));
const STAGE = Machine.fromJSON(compiledIR("interactive_stage"));
const ELEVATOR = Machine.fromJSON(compiledIR("elevator"));

function dispatcher(...machines: Machine[]): ToolDispatcher {
  return new ToolDispatcher(machines, { clock: new FakeClock().now });
}

describe("FlowTools", () => {
  it("has one tool per event, start, status, history, goto and back where the flow has them", () => {
    expect(new FlowTools([RFP]).names()).toEqual(["start", "status", "history", "update_status", "goto", "back"]);
    const tool = new FlowTools([STAGE]).get("tool_call");
    expect(tool?.inputSchema.required).toEqual(["instance_id", "name"]);
    expect(tool?.description).toContain("Accepted in: DISCUSS ('Discuss'), SERIALIZE ('Serialize').");
  });

  it("prefixes every name with several flows, and refuses two tools of one name", () => {
    expect(new FlowTools([RFP, ELEVATOR]).names()).toContain("elevator_call");
    const clash = Machine.fromJSON(compiledIR("microwave"));
    expect(() => new FlowTools([clash])).toThrow("two tools would be called `start`");
  });

  it("gives the start tool the context fields marked input only", () => {
    const start = new FlowTools([RFP]).get("start");
    const context = (start?.inputSchema.properties as Record<string, JsonSchema>).context;
    expect(Object.keys(context?.properties as object)).toEqual(["project", "max_backward_moves"]);
    expect(context?.required).toEqual(["project"]);
  });

  it("narrows goto to the targets reachable now, for an instance", () => {
    const tools = new FlowTools([RFP]);
    const instance = RFP.start({ context: { project: "p" } });
    if (!("send" in instance)) throw new Error("no start");
    const names = tools.forInstance(instance).map((t) => t.name);
    expect(names).toEqual(["status", "history", "update_status", "goto"]);
    const goto = tools.forInstance(instance).find((t) => t.op === "goto");
    expect((goto?.inputSchema.properties as Record<string, JsonSchema>).target?.enum).toEqual(["ANALYZING"]);
  });
});

describe("strict mode", () => {
  const schema: JsonSchema = {
    type: "object",
    properties: {
      a: { type: "string", default: "x", title: "A" },
      m: { type: "object", additionalProperties: { type: "integer" } },
      n: { anyOf: [{ type: "integer" }, { type: "null" }], default: null },
    },
    required: ["m"],
    additionalProperties: false,
  };

  it("requires every property, makes optional ones nullable and maps entry lists", () => {
    expect(strictSchema(schema)).toEqual({
      type: "object",
      properties: {
        a: { anyOf: [{ type: "string" }, { type: "null" }] },
        m: {
          type: "array",
          items: {
            type: "object",
            properties: { key: { type: "string" }, value: { type: "integer" } },
            required: ["key", "value"],
            additionalProperties: false,
          },
          description: "A map, written as a list of {key, value} entries.",
        },
        n: { anyOf: [{ type: "integer" }, { type: "null" }] },
      },
      required: ["a", "m", "n"],
      additionalProperties: false,
    });
  });

  it("turns strict arguments back into the payload", () => {
    expect(fromStrict(schema, { a: null, m: [{ key: "k", value: 1 }], n: null })).toEqual({ m: { k: 1 }, n: null });
    expect(fromStrict(schema, { m: "not a list" })).toEqual({ m: "not a list" });
  });
});

describe("ToolDispatcher", () => {
  it("starts, steps and reports what is allowed next", () => {
    const calls = dispatcher(RFP);
    const started = calls.call("start", { instance_id: "i", context: { project: "p" } });
    expect(started.isError).toBe(false);
    expect(started.data).toMatchObject({ ok: true, instance_id: "i", state: "RFP_RECEIVED", allowed_tools: ["update_status", "goto"] });
    const moved = calls.call("goto", { instance_id: "i", target: "ANALYZING" });
    expect(moved.data).toMatchObject({ ok: true, state: "ANALYZING", title: "Analyzing", goto_targets: ["QNA_GENERATION"] });
    expect(JSON.parse(moved.text())).toEqual(moved.data);
    expect(moved.mcp()).toMatchObject({ isError: false, structuredContent: moved.data });
  });

  it("answers a refusal with the runtime's rejection and the tools allowed instead", () => {
    const calls = dispatcher(RFP);
    calls.call("start", { instance_id: "i", context: { project: "p" } });
    const refused = calls.call("goto", { instance_id: "i", target: "DRAFTING" });
    expect(refused.isError).toBe(true);
    expect(refused.data).toMatchObject({ ok: false, error: "invalid_transition", instance_id: "i", goto_targets: ["ANALYZING"] });
    expect(refused.data.allowed_tools).toEqual([
      expect.objectContaining({ name: "update_status" }),
      expect.objectContaining({ name: "goto" }),
    ]);
  });

  it("gives field-level feedback for bad arguments", () => {
    const calls = dispatcher(RFP);
    calls.call("start", { instance_id: "i", context: { project: "p" } });
    const bad = calls.call("update_status", { instance_id: "i", next_action: 5, typo: 1 });
    expect(bad.data).toMatchObject({ error: "invalid_payload", result: "validation_failed", issue_count: 2 });
    const own = calls.call("goto", { target: 7, extra: true });
    expect(own.data).toMatchObject({
      error: "invalid_arguments",
      issues: {
        invalid: [{ field: "target", provided: 7, problem: "expected a non-empty string, got int", requirement: "a non-empty string" }],
        missing: [{ field: "instance_id", requirement: "a string" }],
        unknown: ["extra"],
      },
      issue_count: 3,
    });
  });

  it("runs a retried call once, by request_id, and a retried start finds its instance", () => {
    const calls = dispatcher(RFP);
    const first = calls.call("start", { request_id: "r-1", context: { project: "p" } });
    expect(first.data.instance_id).toBe(startId("rfp_workspace", "r-1"));
    expect(calls.call("start", { request_id: "r-1", context: { project: "p" } }).data).toMatchObject({ replayed: true });
    const id = String(first.data.instance_id);
    calls.call("goto", { instance_id: id, target: "ANALYZING", request_id: "k" });
    const again = calls.call("goto", { instance_id: id, target: "ANALYZING", request_id: "k" });
    expect(again.data).toMatchObject({ ok: true, state: "ANALYZING", replayed: true });
  });

  it("derives start ids as the Python runtime does", () => {
    // flowc.runtime.tool_calls.start_id("rfp_workspace", "r-1")
    expect(startId("rfp_workspace", "r-1")).toBe("9f1ef0bcd74f5edbbdf002edcdda785a");
  });

  it("refuses unknown tools, unknown instances and ids no store could keep", () => {
    const calls = dispatcher(RFP);
    expect(calls.call("nope").data).toMatchObject({ error: "unknown_tool", tools: ["start", "status", "history", "update_status", "goto", "back"] });
    expect(calls.call("status", { instance_id: "ghost" }).data).toMatchObject({ error: "unknown_instance" });
    const long = calls.call("status", { instance_id: "x".repeat(300) });
    expect(long.data).toMatchObject({ error: "invalid_handle", field: "instance_id", problem: "it is 300 characters long; at most 256 are allowed" });
  });

  it("shows a statechart's active leaves", () => {
    const calls = dispatcher(ELEVATOR);
    const started = calls.call("start", { instance_id: "e", context: {} });
    expect(started.data.active).toEqual([
      { state: "listening", title: "listening", meta: {} },
      { state: "doors_open", title: "Doors open", meta: {} },
    ]);
    expect(started.data.effects).toEqual([{ id: expect.stringMatching(/^e\/[0-9a-f]{16}\/0\/0$/) as unknown, effect: "doors", fields: { opened: true } }]);
  });
});
