"""One module per `flowc` sub-command. Each exposes `register(subparsers)`, which adds its parser
and sets `handler` (a function taking the parsed args and returning the exit code)."""

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
    "mcp",
    "lsp",
)
