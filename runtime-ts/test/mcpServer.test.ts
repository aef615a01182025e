// The example MCP server (examples/mcp-server.ts), driven by the official SDK's client over
// stdio: it lists the flow's tools and answers calls as the Python server does.
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FlowTools } from "../src/agents.js";
import { Machine } from "../src/index.js";
import { compiledFile, compiledIR } from "./hostFixtures.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const VITE_NODE = fileURLToPath(new URL("../node_modules/vite-node/vite-node.mjs", import.meta.url));

describe("the example MCP server", () => {
  const client = new Client({ name: "flowc-ts-test", version: "0.1.0" });

  beforeAll(async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [VITE_NODE, "examples/mcp-server.ts", compiledFile("rfp_workspace")],
      cwd: ROOT,
      stderr: "pipe",
    });
    await client.connect(transport);
  }, 60_000);

  afterAll(async () => {
    await client.close();
  });

  it("lists the flow's tools with the runtime's schemas", async () => {
    const { tools } = await client.listTools();
    const expected = new FlowTools([Machine.fromJSON(compiledIR("rfp_workspace"))]).mcp();
    expect(tools).toEqual(expected);
  });

  it("runs calls and answers refusals and bad arguments", async () => {
    const started = await client.callTool({ name: "start", arguments: { instance_id: "s1", context: { project: "acme" } } });
    expect(started.isError).toBe(false);
    expect(started.structuredContent).toMatchObject({ ok: true, instance_id: "s1", state: "RFP_RECEIVED" });
    const moved = await client.callTool({ name: "goto", arguments: { instance_id: "s1", target: "ANALYZING" } });
    expect(moved.structuredContent).toMatchObject({ ok: true, state: "ANALYZING" });
    const refused = await client.callTool({ name: "goto", arguments: { instance_id: "s1", target: "SCOPE_FREEZE" } });
    expect(refused.isError).toBe(true);
    expect(refused.structuredContent).toMatchObject({ ok: false, error: "invalid_transition" });
    const bad = await client.callTool({ name: "update_status", arguments: { instance_id: "s1", next_action: 3 } });
    expect(bad.structuredContent).toMatchObject({ error: "invalid_payload", issue_count: 1 });
    const content = bad.content as { type: string; text: string }[];
    expect(JSON.parse(content[0]?.text ?? "")).toEqual(bad.structuredContent);
  });
});
