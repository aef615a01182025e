"""`flowc lsp`: the language server, over stdio (pygls and lsprotocol, the `lsp` extra).

Each open document is compiled on open and on every change with the same driver `flowc check`
uses, so the editor shows exactly the compiler's diagnostics (codes, spans, help, fixes). The
answers to requests come from `FileIndex` (analysis.py); this module translates positions (the
compiler counts characters from 1, LSP counts UTF-16 units from 0) and types, and nothing else.
"""

from __future__ import annotations

import sys
from functools import cached_property
from typing import BinaryIO

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from flowc.compiler.diagnostics import (
    Diagnostic,
    Severity,
    column_of_utf16,
    utf16_offset,
)
from flowc.compiler.driver import CompileResult, compile_source
from flowc.compiler.format import FormatError, format_source
from flowc.compiler.lsp.analysis import FileIndex, Kind, Occurrence, Outline, allow_comment_edit
from flowc.compiler.lsp.incremental import reparse
from flowc.compiler.lsp.transport import serve_io, strict_converter
from flowc.compiler.source import SourceFile, Span
from flowc.runtime import __version__

#: Semantic token types, in legend order, and which kind of name each one shows.
TOKEN_TYPES: tuple[str, ...] = (
    "class",
    "event",
    "enum",
    "enumMember",
    "type",
    "variable",
    "parameter",
    "property",
)
_TOKEN_OF: dict[Kind, int] = {
    "state": 0,
    "event": 1,
    "enum": 2,
    "member": 3,
    "type": 4,
    "field": 5,
    "param": 6,
    "recfield": 7,
}
TOKEN_MODIFIERS: tuple[str, ...] = ("declaration",)

_SYMBOL_KINDS: dict[str, lsp.SymbolKind] = {
    "flow": lsp.SymbolKind.Module,
    "context": lsp.SymbolKind.Struct,
    "state": lsp.SymbolKind.Class,
    "event": lsp.SymbolKind.Event,
    "enum": lsp.SymbolKind.Enum,
    "member": lsp.SymbolKind.EnumMember,
    "type": lsp.SymbolKind.Struct,
    "field": lsp.SymbolKind.Field,
    "param": lsp.SymbolKind.Field,
    "recfield": lsp.SymbolKind.Field,
}
_COMPLETION_KINDS: dict[str, lsp.CompletionItemKind] = {
    "keyword": lsp.CompletionItemKind.Keyword,
    "state": lsp.CompletionItemKind.Class,
    "event": lsp.CompletionItemKind.Event,
    "enum": lsp.CompletionItemKind.Enum,
    "member": lsp.CompletionItemKind.EnumMember,
    "field": lsp.CompletionItemKind.Field,
    "function": lsp.CompletionItemKind.Function,
    "type": lsp.CompletionItemKind.Struct,
}


class Analysis:
    """The latest compilation of one document; its index is built when first asked for (the
    diagnostics, sent after every change, do not need it)."""

    def __init__(self, result: CompileResult, previous: Analysis | None) -> None:
        self.result = result
        #: Whether the text parsed cleanly (so the next edit may re-parse only what changed).
        self.clean = result.module is not None and not any(
            d.code.startswith("E0") for d in result.diagnostics
        )
        # Completion is asked mid-edit, of text that often does not parse at all, and still
        # needs the states and events declared: those of the last text that did.
        self._names = previous.names if result.module is None and previous is not None else None

    @property
    def source(self) -> SourceFile:
        return self.result.source

    @cached_property
    def index(self) -> FileIndex:
        return FileIndex(self.result)

    @property
    def names(self) -> FileIndex:
        return self._names if self._names is not None else self.index


class FlowServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            "flowc",
            __version__,
            text_document_sync_kind=lsp.TextDocumentSyncKind.Full,
            converter_factory=strict_converter,
        )
        self.analyses: dict[str, Analysis] = {}

    def analyse(self, uri: str) -> Analysis:
        """Compile the document's current text and publish its diagnostics."""
        document = self.workspace.get_text_document(uri)
        path = to_fs_path(uri) or uri
        text = document.source
        previous = self.analyses.get(uri)
        module = None
        if previous is not None and previous.clean and previous.result.module is not None:
            module = reparse(previous.source.text, previous.result.module, text)
        result = compile_source(text, path, module=module, hashed=False)
        analysis = Analysis(result, previous)
        self.analyses[uri] = analysis
        self.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(
                uri=uri,
                version=document.version,
                diagnostics=[
                    to_lsp_diagnostic(d, analysis.source, uri) for d in result.diagnostics
                ],
            )
        )
        return analysis

    def analysis(self, uri: str) -> Analysis:
        found = self.analyses.get(uri)
        return found if found is not None else self.analyse(uri)


# ---- positions ------------------------------------------------------------------------------


def to_range(span: Span, source: SourceFile) -> lsp.Range:
    start = utf16_offset(source.line_text(span.line), span.column)
    end = utf16_offset(source.line_text(span.end_line), span.end_column)
    return lsp.Range(
        start=lsp.Position(line=span.line - 1, character=start),
        end=lsp.Position(line=span.end_line - 1, character=end),
    )


def from_position(position: lsp.Position, source: SourceFile) -> tuple[int, int]:
    """(line, column), 1-based characters, of an LSP position."""
    line = position.line + 1
    return line, column_of_utf16(source.line_text(line), position.character)


def to_lsp_diagnostic(diag: Diagnostic, source: SourceFile, uri: str) -> lsp.Diagnostic:
    message = diag.message + (f"\nhelp: {diag.help}" if diag.help else "")
    return lsp.Diagnostic(
        range=to_range(diag.span, source),
        message=message,
        severity=(
            lsp.DiagnosticSeverity.Error
            if diag.severity is Severity.ERROR
            else lsp.DiagnosticSeverity.Warning
        ),
        code=diag.code,
        source="flowc",
        related_information=[
            lsp.DiagnosticRelatedInformation(
                location=lsp.Location(uri=uri, range=to_range(r.span, source)), message=r.message
            )
            for r in diag.related
        ]
        or None,
    )


# ---- the server -----------------------------------------------------------------------------


def build_server() -> FlowServer:
    server = FlowServer()
    _serve_document_sync(server)
    _serve_navigation(server)
    _serve_rename(server)
    _serve_views(server)
    _serve_editing(server)
    return server


def _serve_document_sync(server: FlowServer) -> None:
    """Open, change, save and close: each compiles the document again (or forgets it)."""

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: FlowServer, params: lsp.DidOpenTextDocumentParams) -> None:
        ls.analyse(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: FlowServer, params: lsp.DidChangeTextDocumentParams) -> None:
        ls.analyse(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: FlowServer, params: lsp.DidSaveTextDocumentParams) -> None:
        ls.analyse(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: FlowServer, params: lsp.DidCloseTextDocumentParams) -> None:
        ls.analyses.pop(params.text_document.uri, None)
        ls.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[])
        )


def _serve_navigation(server: FlowServer) -> None:
    """Hover, go to definition and find references: each asks the file's index about the name
    under the cursor."""

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    def hover(ls: FlowServer, params: lsp.HoverParams) -> lsp.Hover | None:
        a = ls.analysis(params.text_document.uri)
        found = a.index.hover(*from_position(params.position, a.source))
        if found is None:
            return None
        text, span = found
        return lsp.Hover(
            contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=text),
            range=to_range(span, a.source),
        )

    @server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
    def definition(ls: FlowServer, params: lsp.DefinitionParams) -> lsp.Location | None:
        a = ls.analysis(params.text_document.uri)
        occurrence = a.index.at(*from_position(params.position, a.source))
        target = a.index.definition(occurrence) if occurrence is not None else None
        if target is None:
            return None
        return lsp.Location(uri=params.text_document.uri, range=to_range(target.span, a.source))

    @server.feature(lsp.TEXT_DOCUMENT_REFERENCES)
    def references(ls: FlowServer, params: lsp.ReferenceParams) -> list[lsp.Location]:
        a = ls.analysis(params.text_document.uri)
        occurrence = a.index.at(*from_position(params.position, a.source))
        if occurrence is None:
            return []
        found = a.index.references(occurrence, declaration=params.context.include_declaration)
        return [
            lsp.Location(uri=params.text_document.uri, range=to_range(o.span, a.source))
            for o in found
        ]


def _serve_rename(server: FlowServer) -> None:
    """Rename the name under the cursor, everywhere the file's index finds it."""

    @server.feature(lsp.TEXT_DOCUMENT_PREPARE_RENAME)
    def prepare_rename(ls: FlowServer, params: lsp.PrepareRenameParams) -> lsp.Range | None:
        a = ls.analysis(params.text_document.uri)
        occurrence = a.index.at(*from_position(params.position, a.source))
        return to_range(occurrence.span, a.source) if occurrence is not None else None

    @server.feature(lsp.TEXT_DOCUMENT_RENAME)
    def rename(ls: FlowServer, params: lsp.RenameParams) -> lsp.WorkspaceEdit | None:
        a = ls.analysis(params.text_document.uri)
        occurrence = a.index.at(*from_position(params.position, a.source))
        if occurrence is None:
            return None
        edits = a.index.rename(occurrence, params.new_name)
        if isinstance(edits, str):
            raise ValueError(f"cannot rename: {edits}")
        return _workspace_edit(params.text_document.uri, edits, a.source)


def _serve_editing(server: FlowServer) -> None:
    """Completion, quick fixes and whole-document formatting."""

    @server.feature(
        lsp.TEXT_DOCUMENT_COMPLETION,
        lsp.CompletionOptions(trigger_characters=[".", ">", " "]),
    )
    def completion(ls: FlowServer, params: lsp.CompletionParams) -> lsp.CompletionList:
        uri = params.text_document.uri
        a = ls.analysis(uri)
        # Completion is asked of text being typed, which often does not compile: the names come
        # from the last analysis, the text before the cursor from the document as it is now.
        document = ls.workspace.get_text_document(uri)
        current = SourceFile(a.source.path, document.source)
        line, column = from_position(params.position, current)
        items = a.names.complete_text(current.line_text(line)[: column - 1], line)
        return lsp.CompletionList(
            is_incomplete=False,
            items=[
                lsp.CompletionItem(label=c.label, kind=_COMPLETION_KINDS[c.kind], detail=c.detail)
                for c in items
            ],
        )

    @server.feature(
        lsp.TEXT_DOCUMENT_CODE_ACTION,
        lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix]),
    )
    def code_actions(ls: FlowServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        uri = params.text_document.uri
        a = ls.analysis(uri)
        first = params.range.start.line + 1
        last = params.range.end.line + 1
        return [
            action
            for diag in a.result.diagnostics
            if diag.span.end_line >= first and diag.span.line <= last
            for action in _quick_fixes(diag, a.source, uri)
        ]

    @server.feature(lsp.TEXT_DOCUMENT_FORMATTING)
    def formatting(ls: FlowServer, params: lsp.DocumentFormattingParams) -> list[lsp.TextEdit]:
        return format_edits(ls.workspace.get_text_document(params.text_document.uri).source)


def _serve_views(server: FlowServer) -> None:
    """The document's outline and its names coloured by kind."""

    @server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    def document_symbols(
        ls: FlowServer, params: lsp.DocumentSymbolParams
    ) -> list[lsp.DocumentSymbol]:
        a = ls.analysis(params.text_document.uri)
        return [_symbol(o, a.source) for o in a.index.outline()]

    @server.feature(
        lsp.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL,
        lsp.SemanticTokensLegend(
            token_types=list(TOKEN_TYPES), token_modifiers=list(TOKEN_MODIFIERS)
        ),
    )
    def semantic_tokens(ls: FlowServer, params: lsp.SemanticTokensParams) -> lsp.SemanticTokens:
        a = ls.analysis(params.text_document.uri)
        return lsp.SemanticTokens(data=encode_tokens(a.index.occurrences, a.source))


def _quick_fixes(diag: Diagnostic, source: SourceFile, uri: str) -> list[lsp.CodeAction]:
    """The diagnostic's own fixes (preferred), then, for a warning, the comment that allows
    it on its line."""
    shown = to_lsp_diagnostic(diag, source, uri)
    actions = [
        lsp.CodeAction(
            title=fix.title,
            kind=lsp.CodeActionKind.QuickFix,
            diagnostics=[shown],
            is_preferred=True,
            edit=_workspace_edit(uri, [(e.span, e.new_text) for e in fix.edits], source),
        )
        for fix in diag.fixes
    ]
    if diag.severity is Severity.WARNING:
        span, text = allow_comment_edit(source, diag.span.line, diag.code)
        actions.append(
            lsp.CodeAction(
                title=f"Allow {diag.code} here (`# flowc: allow {diag.code}`)",
                kind=lsp.CodeActionKind.QuickFix,
                diagnostics=[shown],
                edit=_workspace_edit(uri, [(span, text)], source),
            )
        )
    return actions


def format_edits(text: str) -> list[lsp.TextEdit]:
    """One edit replacing the whole text with its canonical layout (none if already so, or if
    the text cannot be formatted because it does not parse)."""
    try:
        formatted = format_source(text)
    except FormatError:  # a file that does not parse is left as it is: its errors are shown
        return []
    if formatted == text:
        return []
    source = SourceFile("", text)
    last = source.line_count
    end = Span(last, len(source.line_text(last)) + 1, last, len(source.line_text(last)) + 1)
    whole = lsp.Range(start=lsp.Position(line=0, character=0), end=to_range(end, source).end)
    return [lsp.TextEdit(range=whole, new_text=formatted)]


def encode_tokens(occurrences: list[Occurrence], source: SourceFile) -> list[int]:
    """The LSP's relative encoding: (Δline, Δstart, length, type, modifiers) per token."""
    data: list[int] = []
    previous_line = previous_start = 0
    for o in occurrences:  # already in position order
        span = o.span
        if span.line != span.end_line:
            continue
        text = source.line_text(span.line)
        line = span.line - 1
        start = utf16_offset(text, span.column)
        length = utf16_offset(text, span.end_column) - start
        delta_start = start - previous_start if line == previous_line else start
        data += [line - previous_line, delta_start, length, _TOKEN_OF[o.kind], int(o.declaration)]
        previous_line, previous_start = line, start
    return data


def _workspace_edit(
    uri: str, edits: list[tuple[Span, str]], source: SourceFile
) -> lsp.WorkspaceEdit:
    return lsp.WorkspaceEdit(
        changes={
            uri: [lsp.TextEdit(range=to_range(span, source), new_text=text) for span, text in edits]
        }
    )


def _symbol(outline: Outline, source: SourceFile) -> lsp.DocumentSymbol:
    return lsp.DocumentSymbol(
        name=outline.name,
        kind=_SYMBOL_KINDS[outline.kind],
        detail=outline.detail,
        range=to_range(outline.span, source),
        selection_range=to_range(outline.name_span, source),
        children=[_symbol(c, source) for c in outline.children] or None,
    )


def serve(stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
    """Run the server on stdin/stdout until the client asks it to exit."""
    serve_io(build_server(), stdin or sys.stdin.buffer, stdout or sys.stdout.buffer)
