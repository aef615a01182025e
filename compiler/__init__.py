"""flowc.compiler: `.flow` source -> checked, validated transition graph (`flowc.runtime.model`).

The pipeline, one module a stage:

    source.py       text, lines and spans
    parse.py        text -> Lark tree -> AST (ast.py); syntax diagnostics
    resolve.py      symbol tables: names, declared types, states, events
    typecheck.py    guards, actions, defaults and templates against those types
    lower.py        checked AST -> IR (flowc.runtime.model.CompiledFlow)
    lint.py         graph analyses on networkx
    driver.py       runs the stages and gathers every diagnostic
    diagnostics.py  Diagnostic, codes, text and JSON renderers
    cli.py          the `flowc` command
"""

from flowc.compiler.diagnostics import Diagnostic, Severity
from flowc.compiler.driver import CompileResult, compile_file, compile_source

__all__ = ["CompileResult", "Diagnostic", "Severity", "compile_file", "compile_source"]
