"""The `flowc` sub-commands that host the runtime (run, instances, worker, mcp). Each module
exposes `register(subparsers)` as the compiler's commands do (`flowc.compiler.commands`); the
`flowc` entry point registers both lists."""
