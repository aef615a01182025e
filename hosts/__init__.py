"""flowc.hosts: the programs that run compiled flows for someone else.

The runtime (`flowc.runtime`) is a library: it loads the IR and steps instances. A host wraps
it for a caller: a person at a terminal (`flowc run`, `flowc instances`), a timer worker
(`flowc worker`), a model over MCP (`mcp_server`). Hosts may use the compiler (they accept
.flow files) and the runtime; neither of those imports a host.

- `operations`: what every host does with a store and flow files (open a store, load machines,
  write journals), independent of how the host is driven;
- `commands/`: the `flowc` sub-commands that are hosts, each a thin argparse layer;
- `mcp_server`: `flowc mcp`, a flow's events as MCP tools (MCP SDK);
- `inspect/`: `flowc inspect`, a local web app showing stored runs.
"""
