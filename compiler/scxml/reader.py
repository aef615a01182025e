"""A safe SCXML reader: the file's text to a tree of elements that remember where they were.

SCXML files come from elsewhere, so the reader trusts nothing in them. It runs the standard
library's expat parser with every door that could reach outside the text closed: a document
type declaration (`<!DOCTYPE`, where entities and external subsets are declared) is refused
before expat reads any of it, so no entity is ever declared, expanded (billion laughs) or
fetched (external entities); processing instructions are ignored. The size of the file, the
depth of nesting and the number of elements are bounded before and while parsing. defusedxml
would close the same doors around the same expat; doing it here keeps the dependency list as
it is and puts every refusal on a diagnostic with a position.
"""

from __future__ import annotations

import codecs
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from xml.parsers import expat

from flowc.compiler.diagnostics import Diagnostic
from flowc.compiler.source import Span

SCXML_NS = "http://www.w3.org/2005/07/scxml"
#: flowc's own namespace: what an export keeps that SCXML has no word for (types, declared
#: events); SCXML processors ignore it, the importer reads it.
FLOWC_NS = "https://flowc.dev/ns/scxml"

#: Bounds on what the reader accepts. The largest W3C test is a few kilobytes; real charts stay
#: well under a megabyte.
MAX_BYTES = 4 * 1024 * 1024
MAX_DEPTH = 64
MAX_ELEMENTS = 50_000


@dataclass
class Element:
    """One SCXML element: its local name, attributes, children, text and position (1-based
    line and column of its `<`). `comments` are the XML comments written just before it."""

    tag: str
    attrs: dict[str, str]
    line: int
    column: int
    namespace: str = SCXML_NS
    children: list[Element] = field(default_factory=list)
    text: str = ""
    comments: list[str] = field(default_factory=list)

    @property
    def span(self) -> Span:
        return Span(self.line, self.column, self.line, self.column + 1 + len(self.tag))

    def attr_span(self, name: str) -> Span:
        """The element's span: expat does not report attribute positions."""
        del name
        return self.span

    def find(self, tag: str) -> list[Element]:
        return [c for c in self.children if c.tag == tag]


@dataclass
class Document:
    root: Element | None
    text: str
    diagnostics: list[Diagnostic]
    #: Comments before the root element (the W3C tests explain themselves there).
    preamble: list[str] = field(default_factory=list)


#: A file a chart may name beside itself (`<data src>`, `<invoke src>`): a plain name, no
#: directory, not hidden.
BESIDE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")


class NotReadable(Exception):
    """Why a file a chart names beside itself is not read (`read_beside`)."""


def read_beside(directory: Path, name: str, limit: int) -> bytes:
    """The bytes of the regular file `name` (a plain name: no directory, not hidden) in
    `directory`, of at most `limit` bytes. Opened without following a link and checked on the
    open file, so that what is read is what was checked; raises NotReadable."""
    if not BESIDE_NAME.fullmatch(name):
        raise NotReadable("not the name of a file beside the chart (no directory, not hidden)")
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(directory / name, flags)
    except OSError as exc:
        raise NotReadable(f"not readable ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as opened:
        if not stat.S_ISREG(os.fstat(opened.fileno()).st_mode):
            raise NotReadable("not a regular file")
        raw = opened.read(limit + 1)
    if len(raw) > limit:
        raise NotReadable(f"larger than {limit} bytes")
    return raw


class _Refused(Exception):
    def __init__(self, diag: Diagnostic) -> None:
        super().__init__(diag.message)
        self.diag = diag


def read_scxml(data: bytes | str, path: str = "<input>") -> Document:
    """Parse SCXML text; on any refusal, `root` is None and `diagnostics` says why."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if len(raw) > MAX_BYTES:
        diag = Diagnostic.make(
            "E403",
            f"the file is larger than {MAX_BYTES:,} bytes, the most the SCXML reader takes",
            Span(1, 1, 1, 2),
        )
        return Document(None, "", [_at(diag, path)])
    try:
        text = decode(raw)
    except _Refused as refused:
        return Document(None, "", [_at(refused.diag, path)])
    builder = _TreeBuilder(path, text)
    parser = expat.ParserCreate(namespace_separator=" ")
    builder.attach(parser)
    try:
        # Parsed as text: expat itself reads only UTF-8, UTF-16 and a few single-byte
        # encodings (and raises a bare ValueError on multi-byte ones such as Shift_JIS).
        parser.Parse(text, True)
    except _Refused as refused:
        return Document(None, text, [refused.diag])
    except expat.ExpatError as exc:
        message = expat.errors.messages.get(exc.code, str(exc)) if exc.code else str(exc)
        diag = Diagnostic.make(
            "E401",
            f"not well-formed XML: {message}",
            Span.point(exc.lineno, exc.offset + 1),
        )
        return Document(None, text, [_at(diag, path)])
    if builder.root is None:  # pragma: no cover - expat rejects a document without an element
        diag = Diagnostic.make("E401", "not well-formed XML: no element", Span(1, 1, 1, 2))
        return Document(None, text, [_at(diag, path)])
    return Document(builder.root, text, [], builder.preamble)


#: Byte-order marks and, without one, the first bytes of `<?` in the encodings that are not
#: ASCII-compatible; the XML declaration is read in that encoding (XML 1.0, appendix F).
_SNIFF = (
    (b"\xef\xbb\xbf", "utf-8-sig"),
    (b"\xff\xfe\x00\x00", "utf-32"),
    (b"\x00\x00\xfe\xff", "utf-32"),
    (b"\xff\xfe", "utf-16"),
    (b"\xfe\xff", "utf-16"),
    (b"<\x00\x00\x00", "utf-32-le"),
    (b"\x00\x00\x00<", "utf-32-be"),
    (b"<\x00?\x00", "utf-16-le"),
    (b"\x00<\x00?", "utf-16-be"),
)
_DECLARED = re.compile(r"""^<\?xml[^>]*?\sencoding\s*=\s*["']([A-Za-z][A-Za-z0-9._-]*)["']""")


def decode(raw: bytes) -> str:
    """The file's text, in the encoding its byte-order mark or XML declaration names (UTF-8
    when neither does). An unknown encoding or bytes that are not valid in it are refused."""
    family = next((name for mark, name in _SNIFF if raw.startswith(mark)), None)
    head = raw[:512].decode(family or "latin-1", errors="replace").lstrip("\ufeff")
    declared = _DECLARED.match(head)
    encoding = family or (declared.group(1) if declared else "utf-8")
    try:
        codec = codecs.lookup(encoding).name
    except LookupError:
        raise _Refused(
            Diagnostic.make(
                "E401",
                f"unknown encoding `{encoding}` in the XML declaration",
                Span(1, 1, 1, 6),
                help='save the file as UTF-8 (and declare `encoding="UTF-8"`)',
            )
        ) from None
    if codec == "utf-8":
        codec = "utf-8-sig"
    try:
        return raw.decode(codec)
    except UnicodeDecodeError as bad:
        before = raw[: bad.start].decode(codec, errors="replace")
        line = before.count("\n") + 1
        column = len(before) - (before.rfind("\n") + 1) + 1
        raise _Refused(
            Diagnostic.make(
                "E401",
                f"not well-formed XML: the bytes at offset {bad.start} are not valid {encoding}",
                Span.point(line, column),
                help=f"save the file as {encoding} throughout, or as UTF-8",
            )
        ) from None


def _at(diag: Diagnostic, path: str) -> Diagnostic:
    return Diagnostic(diag.code, diag.message, diag.span, path, diag.help, diag.severity)


_WS = re.compile(r"\s+")


class _TreeBuilder:
    def __init__(self, path: str, text: str) -> None:
        self.path = path
        self.text_lines = text.split("\n")
        self.parser_column = -1
        self.stack: list[Element] = []
        self.root: Element | None = None
        self.count = 0
        self.pending_comments: list[str] = []
        self.preamble: list[str] = []
        self.parser: expat.XMLParserType | None = None

    def attach(self, parser: expat.XMLParserType) -> None:
        self.parser = parser
        parser.StartElementHandler = self.start
        parser.EndElementHandler = self.end
        parser.CharacterDataHandler = self.chars
        parser.CommentHandler = self.comment
        # The refusals: a DOCTYPE is where entities live, so none is read at all.
        parser.StartDoctypeDeclHandler = self.doctype
        parser.EntityDeclHandler = self.entity
        parser.ExternalEntityRefHandler = self.external
        parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
        # Undeclared entity references such as `&foo;` are a well-formedness error in expat.

    def _where(self) -> Span:
        assert self.parser is not None
        column = self.parser.CurrentColumnNumber if self.parser_column < 0 else self.parser_column
        return Span.point(self.parser.CurrentLineNumber, column + 1)

    def _refuse(self, code: str, message: str, help: str | None = None) -> _Refused:
        diag = Diagnostic.make(code, message, self._where(), help=help)
        return _Refused(_at(diag, self.path))

    def doctype(self, *args: object) -> None:
        assert self.parser is not None
        # expat reports the position after the name; point at the `<!DOCTYPE` itself.
        line = self.parser.CurrentLineNumber
        start = self.text_lines[line - 1].find("<!DOCTYPE") if line <= len(self.text_lines) else -1
        if start >= 0:
            self.parser_column = start
        raise self._refuse(
            "E402",
            "a document type declaration (`<!DOCTYPE ...>`) is refused",
            "SCXML needs no DTD; DTDs declare entities, which can expand without bound or "
            "read other files. Remove the declaration",
        )

    def entity(self, *args: object) -> None:  # pragma: no cover - only inside a DOCTYPE
        raise self._refuse("E402", "an entity declaration is refused")

    def external(self, *args: object) -> int:  # pragma: no cover - only inside a DOCTYPE
        raise self._refuse("E402", "an external entity is refused")

    def start(self, name: str, attrs: dict[str, str]) -> None:
        self.count += 1
        if self.count > MAX_ELEMENTS:
            raise self._refuse("E403", f"more than {MAX_ELEMENTS:,} elements")
        if len(self.stack) >= MAX_DEPTH:
            raise self._refuse("E404", f"elements nested more than {MAX_DEPTH} deep")
        namespace, _, local = name.rpartition(" ")
        # Elements without a namespace are read as SCXML, as SCXML processors commonly do.
        namespace = namespace or SCXML_NS
        where = self._where()
        element = Element(
            local,
            # Unprefixed attributes have no namespace; others keep theirs: `NS local`.
            dict(attrs),
            where.line,
            where.column,
            namespace,
            comments=self.pending_comments,
        )
        self.pending_comments = []
        if self.stack:
            self.stack[-1].children.append(element)
        else:
            self.root = element
        self.stack.append(element)

    def end(self, name: str) -> None:
        element = self.stack.pop()
        element.text = element.text.strip()

    def chars(self, data: str) -> None:
        if self.stack:
            self.stack[-1].text += data

    def comment(self, data: str) -> None:
        text = _WS.sub(" ", data).strip()
        if not text:
            return
        if self.root is None:
            self.preamble.append(text)
        else:
            self.pending_comments.append(text)
