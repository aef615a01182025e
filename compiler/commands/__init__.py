"""One module per `flowc` sub-command. Each exposes `register(subparsers)`, which adds its parser
and sets `handler` (a function taking the parsed args and returning the exit code)."""

#: Exit codes, the same for every sub-command: success; the input has errors (or a run was
#: rejected); usage error.
EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2

#: Every `flowc` sub-command and the module that registers it, in the order `flowc --help`
#: shows. The compiler's commands live here; the commands that host the runtime (run a flow,
#: drive stored instances, fire timers, inspect, replay, serve MCP) live in
#: `flowc.hosts.commands`. The `flowc` program is the one place that joins the two lists.
COMMAND_MODULES: dict[str, str] = {
    name: f"flowc.{package}.commands.{name}"
    for package, names in (
        (
            "compiler",
            ("check", "test", "paths", "explore", "vectors", "compile", "render", "docs", "fmt"),
        ),
        ("hosts", ("run", "instances", "worker", "inspect", "replay", "mcp")),
        ("compiler", ("lsp", "scxml_import", "scxml_export")),
    )
    for name in names
}
