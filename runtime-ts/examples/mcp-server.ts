// An MCP server on the official TypeScript SDK that serves compiled flows' events as tools:
//   node mcp-server.js FLOW.json [FLOW.json ...]        (stdio transport)
// Each tool call runs on instances kept in this process's memory, with the same tool names,
// schemas, results, refusals and feedback as `flowc mcp` (the Python server). An app imports
// "@flowc/runtime" and "@flowc/runtime/agents"; this example imports the sources beside it.
import { readFileSync } from "node:fs";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { Machine } from "../src/index.js";
import { ToolDispatcher } from "../src/agents.js";

/** A server answering `tools/list` and `tools/call` for the flows in `paths`. */
export function flowServer(paths: string[]): Server {
  const machines = paths.map((path) => Machine.fromJSON(readFileSync(path, "utf8")));
  const dispatcher = new ToolDispatcher(machines);
  const server = new Server({ name: "flowc-ts-example", version: "0.1.0" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: dispatcher.tools.mcp() as never[] }));
  server.setRequestHandler(CallToolRequestSchema, (request) => {
    const { name, arguments: args } = request.params;
    return dispatcher.call(name, args ?? null).mcp();
  });
  return server;
}

async function main(paths: string[]): Promise<void> {
  if (paths.length === 0) {
    process.stderr.write("usage: mcp-server FLOW.json [FLOW.json ...]\n");
    process.exitCode = 2;
    return;
  }
  await flowServer(paths).connect(new StdioServerTransport());
}

await main(process.argv.slice(2));
