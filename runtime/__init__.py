"""flowc.runtime: load compiled flows and run instances of them.

Imports only pydantic and jinja2 (never Lark, networkx or Graphviz), so it embeds lightly.
"""

from flowc.runtime.model import IR_VERSION, CompiledFlow, IRLoadError

__version__ = "0.1.0"

__all__ = ["IR_VERSION", "CompiledFlow", "IRLoadError", "__version__"]
