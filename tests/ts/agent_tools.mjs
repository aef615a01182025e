// Driven by tests/ts/test_agent_tools.py: the TypeScript runtime's tools and tool calls, for
// comparison with the Python runtime's. Reads a JSON request on standard input:
//   {"flows": [IR path...], "prefix": true|false|null, "now_ms": N, "calls": [{"name", "arguments", "strict"}]}
// and prints {"tools": {mcp, openai, openai_loose, anthropic}, "results": [{is_error, data}]}.
// argv[2]: the folder of the built package.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const built = process.argv[2];
const { Machine, FakeClock } = await import(pathToFileURL(join(built, "index.js")).href);
const { FlowTools, ToolDispatcher } = await import(pathToFileURL(join(built, "agents.js")).href);

const request = JSON.parse(readFileSync(0, "utf8"));
const machines = request.flows.map((path) => Machine.fromJSON(readFileSync(path, "utf8")));
const tools = new FlowTools(machines, request.prefix === null ? {} : { prefix: request.prefix });
const clock = new FakeClock(request.now_ms);
const dispatcher = new ToolDispatcher(machines, { tools, clock: clock.now });
const results = request.calls.map((call) => {
  if (call.advance !== undefined) {
    clock.advance(call.advance);
    return null;
  }
  const result = dispatcher.call(call.name, call.arguments, { strict: call.strict === true });
  return { is_error: result.isError, data: result.data, text: result.text() };
});
const out = {
  tools: { mcp: tools.mcp(), openai: tools.openai(), openai_loose: tools.openai(false), anthropic: tools.anthropic() },
  results,
};
process.stdout.write(JSON.stringify(out));
