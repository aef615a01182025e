"""`flowc lsp`: run the language server on standard input and output (for editors)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from flowc.compiler.commands import EXIT_FAILURE, EXIT_OK


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "lsp",
        help="run the .flow language server over stdio (for editors)",
        description=(
            "Run the Language Server Protocol server for .flow files on standard input and "
            "output: diagnostics as you type, hover, go to definition, references, rename, "
            "completion, document symbols, semantic tokens, code actions and formatting. "
            "Editors start it themselves; see docs/editors.md. Needs the `lsp` extra "
            "(pip install 'flowc[lsp]')."
        ),
    )
    parser.add_argument(
        "--stdio",
        action="store_true",
        help="accepted for editors that pass it; stdio is the only transport",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        from flowc.compiler.lsp.server import serve
    except ImportError as exc:
        print(
            f"flowc lsp: the language server needs the `lsp` extra ({exc.name} is missing): "
            "pip install 'flowc[lsp]'",
            file=sys.stderr,
        )
        return EXIT_FAILURE
    serve()
    return EXIT_OK
