"""One module per `flowc` sub-command. Each exposes `register(subparsers)`, which adds its parser
and sets `handler` (a function taking the parsed args and returning the exit code)."""

#: Exit codes, the same for every sub-command: success; the input has errors (or a run was
#: rejected); usage error.
EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2

#: Order shown in `flowc --help`.
COMMAND_MODULES: tuple[str, ...] = (
    "check",
    "test",
    "paths",
    "explore",
    "compile",
    "render",
    "docs",
    "fmt",
    "run",
    "instances",
    "worker",
    "inspect",
    "replay",
    "mcp",
    "lsp",
    "scxml_import",
    "scxml_export",
)
