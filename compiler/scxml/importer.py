"""SCXML to `.flow` text, written in the statecharts syntax (STATECHARTS.md, docs/scxml.md).

The reader (reader.py) has already refused anything unsafe in the XML itself; this module maps
the elements flowc has an equivalent for and refuses the rest with a diagnostic naming the
element and its line. It never runs anything from the file: expressions go through
expressions.py, which only parses them.

What a `<send>` to the session becomes: SCXML puts such events on the *external* queue, after
the events the step raises, possibly after a delay; flowc's `raise` is the internal queue and
its scheduled events (`send E(...) after D [as ID]`, `cancel ID`) the external one. Only a
computed event name the runtime cannot name becomes the effect `scxml_send(name, delay_ms, id,
data)`, which a host honouring docs/scxml.md (the conformance runner) delivers back to the
instance once `delay_ms` has passed, unless a `scxml_cancel(id)` effect came first.
`<send target="#_internal">` is a `raise`. A send SCXML cannot make raises what SCXML raises for
it (error.execution, error.communication), checked where it runs when its target or type is
computed.

`_event.type`, `.sendid`, `.origin`, `.origintype`, `.invokeid` and `_event.data` as a whole
are payload fields (`scxml_type`, ...) declared on the events whose rules read them; each
`raise` and send fills those its event declares, so those actions are written last (`later`),
once every rule has been read.
"""

from __future__ import annotations

import ast
import keyword
import os
import re
import stat
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from flowc.compiler.diagnostics import Diagnostic
from flowc.compiler.emit.expr_text import expr_text, literal_text
from flowc.compiler.resolve import MAX_TIMER_MS
from flowc.compiler.scxml.expressions import (
    EVENT_DATA_FIELD,
    EVENT_META_FIELDS,
    SCXML_PROCESSOR,
    SCXML_PROCESSOR_NAMES,
    SYSTEM_VARIABLES,
    Names,
    Refusal,
    location,
    meta_field,
    script_assignments,
    session_location,
    translate,
)
from flowc.compiler.scxml.reader import FLOWC_NS, SCXML_NS, Document, Element, read_scxml
from flowc.runtime.builtins import BUILTINS
from flowc.runtime.model import Expr
from flowc.runtime.operators import ARITHMETIC, BINARY_OPERATORS, BOOLEAN_RESULTS

#: Effects the imported flow emits for its host; docs/scxml.md gives their contract.
SEND_EFFECT = "scxml_send"
CANCEL_EFFECT = "scxml_cancel"
LOG_EFFECT = "scxml_log"
#: The target of a `<send>` that is one of the flow's own effects (`emit NAME(...)`): what an
#: export writes for them, read back as the same `emit`.
HOST_TARGET = "#_flowc_host"
#: The events an export names a direct rule's request by (`-> T` in a state: the host asks for
#: T), on a transition marked `flowc:direct`.
DIRECT_PREFIX = "flowc.goto."
#: What an export declares in the flowc namespace at the top of the document.
_DECLARATIONS = frozenset({"event", "effect", "record"})
#: I/O processors SCXML names that flowc does not have: refused (E409) rather than turned into
#: the error.execution SCXML raises for a type a processor does not know.
OTHER_PROCESSORS = frozenset({"http://www.w3.org/TR/scxml/#BasicHTTPEventProcessor", "basichttp"})

#: Words that cannot name a state, event part or field in `.flow` (reserved in the grammar or
#: keywords of the statecharts syntax).
_RESERVED_WORDS = (
    "and or not in if else elif do event state self true false none null on entry exit after "
    "meta always raise emit parallel history deep effect reenter initial final choice flow "
    "context reject unhandled"
)
RESERVED: frozenset[str] = frozenset(_RESERVED_WORDS.split())
_STATE_TAGS = ("state", "parallel", "final", "history")
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h|d)?\s*$")
#: Event patterns resolved once every event is known (`resolve_pattern`).
_PATTERN = re.compile(r"(?:, )?\0([^\0]*)\0")
#: An SCXML event name flowc can declare (dotted words).
_EVENT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*")
#: Actions written once every event's fields are known (`_Importer.later`). XML forbids the
#: character, so no text from the file holds one.
_DEFERRED = re.compile(r"\x01(\d+)\x01")
#: Defaults of the `_event` fields other than the zero value (`_with_default`): an event the
#: host sends is external.
_FIELD_DEFAULTS = {meta_field("type"): 'str = "external"'}
_SEP = ", "
#: What `<data src>` may name: a file beside the chart (no directory, not hidden).
_DATA_FILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
#: The largest file a `<data src>` reads (its text becomes a constant of the flow).
MAX_DATA_FILE = 64 * 1024
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}


@dataclass
class ImportResult:
    flow_text: str | None
    diagnostics: list[Diagnostic]
    document: Document
    #: SCXML features the document uses (see `_Importer.features`), for reports.
    features: set[str] = field(default_factory=set)

    @property
    def ok(self) -> bool:
        return self.flow_text is not None


def import_file(
    path: str | Path, *, datamodel: str | None = None, data_src: bool = False
) -> ImportResult:
    """`import_scxml` of a file; `data_src`: read the files its `<data src>` name beside it."""
    data = Path(path).read_bytes()
    beside = Path(path).parent if data_src else None
    return import_scxml(data, str(path), datamodel=datamodel, data_dir=beside)


def import_scxml(
    data: bytes | str,
    path: str = "<input>",
    *,
    datamodel: str | None = None,
    data_dir: Path | None = None,
) -> ImportResult:
    """SCXML text to `.flow` text. `datamodel` overrides the document's `datamodel`
    attribute (the W3C Python-datamodel tests keep `ecmascript` in some files while their
    expressions are Python). `data_dir`: the directory whose files a `<data src>` may name
    (`read_data_file`); None refuses every `<data src>` (E409)."""
    document = read_scxml(data, path)
    if document.root is None:
        return ImportResult(None, document.diagnostics, document)
    importer = _Importer(document, path, datamodel, data_dir)
    text = importer.run()
    return ImportResult(text, importer.diagnostics, document, importer.features)


def flow_name(text: str, fallback: str = "x") -> str:
    """A `.flow` name for an SCXML id: other characters become `_`, a leading digit gets a
    prefix, reserved words a trailing `_`."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", text) or fallback
    if name[0].isdigit():
        name = f"{fallback}_{name}"
    if name in RESERVED:
        name += "_"
    return name


def event_flow_name(text: str) -> str:
    if text.startswith("done.state."):
        return "done.state." + flow_name(text[len("done.state.") :], "s")
    return ".".join(flow_name(part, "e") for part in text.split("."))


def parse_delay(text: str) -> int | None:
    """Milliseconds of a CSS2 duration (`1s`, `500ms`, `.5s`), or None (not one, or longer
    than the runtime's scheduled events may wait)."""
    match = _DURATION.match(text if not text.startswith(".") else "0" + text)
    if match is None:
        return None
    ms = round(float(match.group(1)) * _UNIT_MS[match.group(2) or "ms"])
    return ms if ms <= MAX_TIMER_MS else None


@dataclass
class _Delay:
    """A send's delay: milliseconds, or the variable a `delayexpr` reads with the constant
    strings it may hold and their milliseconds (None: not a duration)."""

    ms: int
    variable: str | None = None
    choices: list[tuple[str, int | None]] = field(default_factory=list)


@dataclass
class _Send:
    """A `<send>` as read, written out once every event's fields are known."""

    event: str
    #: The text of a computed event name (`eventexpr`), else None.
    name: str | None
    sendid: str
    #: The id the document gives (`id`, `idlocation`), as text: `_event.sendid`.
    own_id: str | None
    data: list[tuple[str, str]]
    #: `_event.data` as a whole (text), when the send carries data.
    whole: str | None
    delay: _Delay
    internal: bool
    address: Expr | None
    processor: Expr | None
    #: For a computed event name read from a variable only ever given constant names: those
    #: values and their declared events (each sent as a scheduled event of the runtime).
    choices: list[tuple[str, str]] = field(default_factory=list)


class _SendRefused(Exception):
    """A `<send>` flowc cannot translate (reported): it is left out."""


class _SendFails(Exception):
    """A `<send>` SCXML fails to run (an invalid target, an unknown type, an undeclared name):
    it raises error.execution rather than sending."""


@dataclass
class _StateInfo:
    element: Element
    name: str
    kind: str  # state | parallel | final | history
    parent: str | None
    children: list[str] = field(default_factory=list)


class _Importer:
    def __init__(
        self, document: Document, path: str, datamodel: str | None, data_dir: Path | None
    ) -> None:
        assert document.root is not None
        self.data_dir = data_dir
        self.root = document.root
        self.document = document
        self.path = path
        self.datamodel_override = datamodel
        self.diagnostics: list[Diagnostic] = []
        self.features: set[str] = set()
        self.states: dict[str, _StateInfo] = {}  # SCXML id -> info, document order
        self.events: dict[str, dict[str, str | None]] = {}  # flow event -> field -> type
        self.var_types: dict[str, str | None] = {}
        self.names = Names({}, "")
        self.send_ids = 0
        #: Payload field -> type, inferred from its uses (`infer_from_uses`).
        self.field_types: dict[str, str] = {}
        #: Every expression translated, with the variable it is assigned to (if any).
        self.used: list[tuple[str | None, Expr]] = []
        #: state id -> its `initial -> ...` rule (text), and the targets the document's own
        #: initial gives a top-level state entered by default only at the start
        self.initial_rules: dict[str, str] = {}
        self.forced: dict[str, list[str]] = {}
        #: Event fields whose type an export declared (not optional on re-import).
        self.declared_fields: set[str] = set()
        #: effects sent to HOST_TARGET -> field -> type (declared by `<flowc:effect>`)
        self.effects: dict[str, dict[str, str | None]] = {}
        #: record type -> field -> `type` or `type = default` (declared by `<flowc:record>`)
        self.records: dict[str, dict[str, str]] = {}
        #: Actions written at the end (`later`), and whether the last action written fails.
        self.deferred: list[Callable[[], str]] = []
        #: Events an export marked `flowc:internal` (only the flow itself sends them).
        self.internal_events: set[str] = set()
        self.failed = False
        #: (flow event, fields its rule reads): also declared on the `event.*` events the rule
        #: covers, once they are known.
        self.rule_reads: list[tuple[str, set[str]]] = []
        #: Event -> the type of `_event.data` as a whole, from its sends (events differ).
        self.data_types: dict[str, str] = {}
        self.whole_type: str | None = None
        #: The top-level initial state, and the `<data>` that fail when the document starts.
        self.start_errors: tuple[str | None, list[Element]] = (None, [])
        self.start_state: str | None = None
        #: Variables whose `<data>` value nothing can read (`retype_overwritten_data`).
        self.unread_defaults: set[str] = set()
        #: The text of each file a `<data src>` names, by the element's (line, column).
        self.data_files: dict[tuple[int, int], str] = {}
        #: How many conditions that are not expressions SCXML evaluates before the rule being
        #: written, for each event it takes (`_guard_errors`).
        self.guard_errors = 0
        #: state id -> the context field saying its data is bound (`late_binding`)
        self.late_flags: dict[str, str] = {}
        #: Rules of a compound's internal transitions, written in its children (`pushed_to`).
        self.pushed: dict[str, list[str]] = {}
        self.reenter_target = False
        for meta in EVENT_META_FIELDS:
            self.field_types[meta_field(meta)] = "str"

    # ---- diagnostics ----------------------------------------------------------------------

    def error(self, code: str, message: str, element: Element, help: str | None = None) -> None:
        diag = Diagnostic.make(code, f"<{element.tag}>: {message}", element.span, help=help)
        self.diagnostics.append(
            Diagnostic(diag.code, diag.message, diag.span, self.path, diag.help, diag.severity)
        )

    def refused(self, refusal: Refusal, element: Element) -> None:
        self.error(refusal.code, refusal.message, element, refusal.help)

    def fails_at_run_time(self, location: str, source: str) -> bool:
        """Whether SCXML fails this `<assign>` (error.execution): its location is a system
        variable (read-only), a name never declared, or a path below one (`foo.bar`), or its
        expression is not one."""
        loc = location.strip()
        root = re.match(r"[A-Za-z_]\w*", loc)
        if loc in SYSTEM_VARIABLES:
            return True
        undeclared = root is not None and root.group(0) not in self.var_types
        if undeclared and (not loc.isidentifier() or not loc.startswith("_")):
            return True
        return _syntax_error(source)

    def condition(self, text: str, element: Element) -> Expr | None:
        """A `cond`: one that is not an expression at all is false, as SCXML says (which also
        raises error.execution: flowc's guards raise nothing, see docs/scxml.md)."""
        if _syntax_error(text):
            self.features.add("invalid-cond")
            return Expr(op="lit", value=False)
        return self.expr(text, element)

    def expr(self, text: str, element: Element) -> Expr | None:
        try:
            translated = translate(text, self.names)
        except Refusal as refusal:
            self.refused(refusal, element)
            return None
        self.used.append((None, translated))
        return translated

    # ---- the document ---------------------------------------------------------------------

    def run(self) -> str | None:
        root = self.root
        if not self.readable_root():
            return None
        binding = root.attrs.get("binding", "early")
        if binding == "late":
            self.features.add("late-binding")
        elif binding != "early":
            self.error("E412", f"the data binding `{binding}` is not SCXML's", root)
        # Every problem at once: the refusals of whole elements, then whatever the states,
        # rules and expressions add.
        self.check_elements(root)
        self.collect_states(root, None)
        if not self.states:
            self.error("E413", "the document has no state", root)
            return None
        self.collect_data(root)
        self.collect_declarations(root)
        self.names = Names(
            {k: flow_name(k, "v") for k in self.var_types},
            root.attrs.get("name", ""),
            on_state=self.in_state,
            is_record_field=self.is_record_field if self.records else None,
            never_none=self.never_none,
        )
        self.start_state = self.entered_once(root)
        self.start_errors = self.data_failures(root)
        self.check_load_scripts()
        self.retype_overwritten_data()
        body = self.write_states(root, None, "")
        self.infer_from_uses()
        self.complete_event_fields()
        body = _DEFERRED.sub(lambda m: self.deferred[int(m.group(1))](), body)
        body = _PATTERN.sub(self.resolve_pattern, body)
        header = self.write_header(root)
        if self.diagnostics:
            unique = {(d.span.line, d.span.column, d.code, d.message): d for d in self.diagnostics}
            self.diagnostics = [unique[k] for k in sorted(unique)]
            return None
        return header + body

    def readable_root(self) -> bool:
        """Whether the root is an SCXML document in a datamodel flowc reads (else reported)."""
        root = self.root
        if root.tag != "scxml" or root.namespace != SCXML_NS:
            self.error(
                "E405",
                "not an SCXML document",
                root,
                f'the root must be <scxml xmlns="{SCXML_NS}">',
            )
            return False
        datamodel = self.datamodel_override or root.attrs.get("datamodel", "null")
        if datamodel not in ("null", "python"):
            self.error(
                "E406",
                f"the `{datamodel}` datamodel is not supported",
                root,
                "flowc maps the null and Python datamodels onto its own expression language",
            )
            return False
        return True

    def complete_event_fields(self) -> None:
        """Give each event the fields read where it is not the one known event, with the
        types found for them."""
        # Fields read where no single event is known (entry, exit, `*` rules): every event.
        for event, fields in self.events.items():
            for name in sorted(self.names.event_fields):
                fields.setdefault(name, None)
            if fields.get(EVENT_DATA_FIELD, "") is None and event in self.data_types:
                fields[EVENT_DATA_FIELD] = self.data_types[event]
            for name, ty in fields.items():
                if ty is None and name in self.field_types:
                    fields[name] = self.field_types[name]
        # A rule for `e` also covers the `e.*` events: they get the fields it reads.
        for event, read in self.rule_reads:
            for other, fields in self.events.items():
                if other.startswith(event + "."):
                    for name in sorted(read):
                        fields.setdefault(name, self.field_types.get(name))

    def infer_from_uses(self) -> None:
        """Types for untyped variables and payload fields from how expressions use them: an
        operand compared or combined with a typed one, a value stored in a typed variable
        (SCXML is untyped; flowc is not)."""
        by_field = {flow_name(v, "v"): v for v in self.var_types}
        for _ in range(3):  # a few rounds let one inference feed the next
            for target, expr in self.used:
                self.learn_from_operands(expr, by_field)
                if target is not None and target in by_field:
                    var = by_field[target]
                    self.learn_type(expr, self.var_types.get(var), by_field)
                    self.learn_type(Expr(op="ctx", value=target), self.known_type(expr), by_field)

    def known_type(self, expr: Expr) -> str | None:
        """The type of `expr` as far as it is known so far."""
        if expr.op == "event":
            return self.field_types.get(str(expr.value))
        return _infer(expr, self.var_types, self.names)

    def learn_type(self, expr: Expr, ty: str | None, by_field: dict[str, str]) -> None:
        """`expr`, a payload field or an untyped variable (`by_field`: the variable of each
        context field), has the simple type `ty`, if it is one."""
        if ty not in ("int", "float", "str", "bool"):
            return
        if expr.op == "event":
            self.field_types.setdefault(str(expr.value), ty)
        elif expr.op == "ctx" and expr.value in by_field:
            var = by_field[str(expr.value)]
            if self.var_types.get(var) is None:
                self.var_types[var] = ty

    def learn_from_operands(self, expr: Expr, by_field: dict[str, str]) -> None:
        """Each operand compared or combined with another inside `expr` has the other's type."""
        if expr.op in _TYPED_PAIRS and len(expr.args) == 2:
            left, right = expr.args
            self.learn_type(left, self.known_type(right), by_field)
            self.learn_type(right, self.known_type(left), by_field)
        if expr.op in ("in", "not in") and len(expr.args) == 2:
            # `x in [A, B]` (an equality with either name of a processor): the items' type
            self.learn_type(expr.args[0], _item_type(self.known_type(expr.args[1])), by_field)
        for arg in expr.args:
            self.learn_from_operands(arg, by_field)

    def resolve_pattern(self, match: re.Match[str]) -> str:
        """The event list of a descriptor, once every event is known: `*` is every event;
        `name.*` stays only where some event has that prefix (E126 otherwise)."""
        lead = ", " if match.group(0).startswith(", ") else ""
        pattern = match.group(1)
        if pattern == "*":
            done = [
                f"done.state.{info.name}"
                for info in self.states.values()
                if info.kind == "parallel" or (info.kind == "state" and info.children)
            ]
            return lead + ", ".join([*self.events, *done])
        prefix = pattern.removesuffix(".*")
        if any(e.startswith(prefix + ".") for e in self.events):
            return lead + pattern
        return ""

    def check_elements(self, element: Element) -> None:
        """Refuse what flowc has no place for, wherever it is."""
        for child in element.children:
            if child.namespace == FLOWC_NS and child.tag in _DECLARATIONS and element is self.root:
                continue
            if child.namespace != SCXML_NS:
                self.error(
                    "E412", f"element from namespace `{child.namespace}` is not SCXML", child
                )
                continue
            tag = child.tag
            if tag == "script":
                self.features.add("script")
                self.check_script(child)
            elif tag == "invoke":
                self.features.add("invoke")
                self.error("E408", "<invoke> (child sessions) is not supported", child)
            elif tag == "foreach" and not (child.attrs.get("array") and child.attrs.get("item")):
                self.features.add("foreach")
                self.error(
                    "E415",
                    "<foreach> needs `array` and `item`",
                    child,
                    "the loop goes through `array`, setting the variable `item` to each value",
                )
            elif tag == "donedata":
                self.features.add("donedata")  # refused or mapped by `write_body`
            else:
                self.check_elements(child)

    def check_script(self, script: Element) -> None:
        """A `<script>` is read as the `<assign>`s it makes (`script_assignments`); one with
        `src`, or anything but assignments, is refused (E407)."""
        if "src" in script.attrs:
            self.error("E407", "scripts are refused from `src` (another resource)", script)
            return
        try:
            script_assignments(script.text)
        except Refusal as refusal:
            self.refused(refusal, script)

    def check_load_scripts(self) -> None:
        """A top-level `<script>` runs once, when the document loads: flowc runs it first in
        the start state's entry, so that state must be entered only at the start (E407)."""
        if self.start_state is not None:
            return
        for script in self.root.find("script"):
            self.error(
                "E407",
                "a top-level script runs once, when the document loads; flowc runs it in the "
                "initial state's entry, and that state is entered again",
                script,
            )

    def assignments(self, element: Element) -> Iterator[tuple[str, str]]:
        """(location, expression text) of every assignment below `element`: the `<assign>`s
        and the statements of the `<script>`s, in document order."""
        for child in element.children:
            if child.tag == "assign":
                yield child.attrs.get("location", ""), child.attrs.get("expr") or child.text
            elif child.tag == "script":
                yield from _statements(child)
            else:
                yield from self.assignments(child)

    # ---- states ---------------------------------------------------------------------------

    def collect_states(self, element: Element, parent: str | None) -> None:
        taken = {info.name for info in self.states.values()}
        for child in element.children:
            if child.tag not in _STATE_TAGS or child.namespace != SCXML_NS:
                continue
            sid = self.id_of(child)
            name = flow_name(sid, "s")
            while name in taken:
                name += "_"
            taken.add(name)
            if sid in self.states:
                self.error("E413", f"state id `{sid}` is used twice", child)
                continue
            self.states[sid] = _StateInfo(child, name, child.tag, parent)
            if parent is not None:
                self.states[parent].children.append(sid)
            self.collect_states(child, sid)

    def initial_children(self, element: Element, parent: str | None) -> set[str]:
        """The SCXML ids of the children of `element` entered by default. An initial that is
        not simply a child (deeper targets that differ from the defaults between, several
        targets, actions, a history) becomes an initial rule of `element` (`initial_rules`);
        the document's own such initial becomes one of the top-level state holding it."""
        kids = [c for c in element.children if c.tag in ("state", "parallel", "final")]
        if not kids:
            return set()
        if element.tag == "parallel":
            return set()
        sid = None if element is self.root else self.id_of(element)
        wanted: list[str] = []
        transition: Element | None = None
        if element.attrs.get("initial"):
            wanted = element.attrs["initial"].split()
        for initial in element.find("initial"):
            for transition in initial.find("transition"):
                wanted = transition.attrs.get("target", "").split()
        if sid is not None and sid in self.forced:
            wanted, transition = self.forced[sid], None
        if not wanted:
            return {self.id_of(kids[0])}
        for target in wanted:
            if target not in self.states:
                self.error("E413", f"unknown initial state `{target}`", element)
                return set()
        own = {self.id_of(c) for c in kids}
        actions = list(transition.children) if transition is not None else []
        if len(wanted) == 1 and not actions:
            chain = self.default_chain(wanted[0], own, parent)
            if chain is not None:
                return {chain}
        hit = {self.child_holding(self.anchor(t, sid), own) for t in wanted}
        child = hit.pop() if len(hit) == 1 else None
        if child is None:
            self.error(
                "E419",
                "the initial targets are not inside one child state",
                element,
                "a compound state is in one child at a time",
            )
            return set()
        if sid is None:
            info = self.states[child]
            if info.kind != "state" or not info.children or self.targeted(child):
                self.error(
                    "E419",
                    f"the document's initial `{' '.join(wanted)}` differs from the default "
                    f"entry of `{child}`, which is entered by default elsewhere too",
                    element,
                    "flowc enters a compound through its initial rule or child",
                )
                return set()
            self.forced[child] = wanted
            return {child}
        self.features.add("initial-rule")
        rule = "initial -> " + ", ".join(self.states[t].name for t in wanted)
        done = self.actions(actions)
        if done:
            rule += " do " + "; ".join(done)
        self.initial_rules[sid] = rule
        return {child}

    def default_chain(self, target: str, own: set[str], parent: str | None) -> str | None:
        """The child of a state (`own`: its children) holding `target` when its default
        entries lead to `target` anyway, else None."""
        chain = target
        while chain not in own:
            up = self.states[chain].parent
            if up is None or up == parent:
                return None
            inner = self.initial_children(self.states[up].element, up)
            if self.states[up].kind != "parallel" and chain not in inner:
                return None
            chain = up
        return chain

    def anchor(self, target: str, sid: str | None) -> str:
        """Where an initial target lies: a history of the state itself stands for its default
        (what it enters when nothing is recorded)."""
        info = self.states[target]
        if info.kind != "history" or info.parent != sid:
            return target
        for transition in info.element.find("transition"):
            targets = transition.attrs.get("target", "").split()
            if targets and targets[0] in self.states:
                return targets[0]
        return target

    def child_holding(self, target: str, own: set[str]) -> str | None:
        chain: str | None = target
        while chain is not None and chain not in own:
            chain = self.states[chain].parent
        return chain

    def targeted(self, sid: str) -> bool:
        """Whether a transition or a history default leads to state `sid` itself (so it is
        entered by default other than at the start)."""
        for transition in self.walk(self.root, "transition"):
            if sid in transition.attrs.get("target", "").split():
                return True
        return False

    def in_state(self, sid: str) -> Expr:
        """`In('sid')`: `active(NAME)`; a state the document does not have is never active."""
        info = self.states.get(sid)
        if info is None:
            return Expr(op="lit", value=False)
        self.features.add("In")
        return Expr(op="call", value="active", args=(Expr(op="lit", value=info.name),))

    def id_of(self, element: Element) -> str:
        return element.attrs.get("id") or f"s_{element.line}_{element.column}"

    # ---- data -----------------------------------------------------------------------------

    def collect_data(self, element: Element) -> None:
        for data in self.walk(element, "data"):
            did = data.attrs.get("id")
            if not did:
                self.error("E414", "<data> needs an id", data)
                continue
            if "src" in data.attrs:
                self.read_data_file(data)
            self.var_types.setdefault(did, None)
        for script in self.walk(element, "script"):
            # A script's assignment declares its variable (SCXML's Python datamodel).
            for var, _ in _statements(script):
                if _legal_variable(var):
                    self.var_types.setdefault(var, None)
        names = Names({k: flow_name(k, "v") for k in self.var_types}, "")
        for data in self.walk(element, "data"):
            source = self.data_source(data)
            if data.attrs.get("id") and source:
                self.var_types[data.attrs["id"]] = self.type_of(source, names)
        self.widen_mixed_lists(element, names)
        self.collect_loop_variables(element, names)
        for send in self.walk(element, "send"):
            # The id a send stores is a string: `<cancel sendidexpr>` reads it back.
            if send.attrs.get("idlocation") in self.var_types:
                self.var_types[send.attrs["idlocation"]] = "str"
        for var, source in self.assignments(element):
            if var in self.var_types and self.var_types[var] is None:
                self.var_types[var] = self.type_of(source, names)

    def read_data_file(self, data: Element) -> None:
        """The file a `<data src>` names, kept in `data_files`: only when the caller allows it
        (`data_dir`), only a plain file name (`file:NAME` or `NAME`, no directory, not hidden)
        in that directory, a regular file (not a link) of at most MAX_DATA_FILE bytes, UTF-8.
        Anything else is refused (E409): a chart must not read other files."""
        src = data.attrs["src"]
        name = src.removeprefix("file:")
        if self.data_dir is None:
            self.error(
                "E409",
                "<data src> (reading another resource) is refused",
                data,
                "`flowc import scxml --data-src` reads a file named so beside the chart",
            )
            return
        try:
            self.data_files[(data.line, data.column)] = _read_beside(self.data_dir, name)
        except _NotReadable as problem:
            self.error("E409", f'`src="{src}"`: {problem}', data)

    def never_none(self, expr: Expr) -> bool:
        """Whether `expr` is a variable whose `<data>` gives it a value of a scalar or list
        type when the document starts (so SCXML's `is None` on it is false)."""
        if expr.op != "ctx":
            return False
        var = self.variable_of(str(expr.value))
        ty = self.var_types.get(var)
        if ty is None or not (ty in _SCALARS or ty.startswith("list[")):
            return False
        for data in self.walk(self.root, "data"):
            if data.attrs.get("id") == var:
                source = self.data_source(data)
                return bool(source) and not _syntax_error(source) and not self.bound_late(data)
        return False

    def data_source(self, data: Element) -> str:
        """The expression text of a `<data>`'s value: its `expr`, else its text or the file its
        `src` names, read as a `<content>` is (a literal, else a string with its white space
        normalised); "" when it has none."""
        if data.attrs.get("expr"):
            return data.attrs["expr"]
        text = data.text
        if "src" in data.attrs:
            text = self.data_files.get((data.line, data.column), "")
        return expr_text(_text_value(text)) if text.strip() else ""

    def widen_mixed_lists(self, element: Element, names: Names) -> None:
        """A list variable that an `<assign>` extends with items of another type (`xs + ['4']`
        to a list of ints: Python lists mix types) holds `json` items."""
        for assign in self.walk(element, "assign"):
            var = assign.attrs.get("location", "")
            ty = self.var_types.get(var)
            if ty is None or not ty.startswith("list[") or ty == "list[json]":
                continue
            try:
                value = translate(assign.attrs.get("expr", ""), Names(dict(names.variables), ""))
            except Refusal:
                continue
            if value.op == "+" and any(
                a.op == "list" and _infer(a, self.var_types, names) not in (None, ty)
                for a in value.args
            ):
                self.var_types[var] = "list[json]"

    def collect_loop_variables(self, element: Element, names: Names) -> None:
        """`<foreach item index>` declares its variables when they do not exist (SCXML): the
        item has the type of the array's items where it shows, the index is an `int`."""
        for loop in self.walk(element, "foreach"):
            item, index = loop.attrs.get("item", ""), loop.attrs.get("index")
            if _legal_variable(item):
                self.var_types.setdefault(item, None)
                if self.var_types[item] is None:
                    listed = self.type_of(loop.attrs.get("array", ""), names)
                    if listed is not None and listed.startswith("list["):
                        self.var_types[item] = listed[len("list[") : -1]
            if index is not None and _legal_variable(index):
                self.var_types.setdefault(index, "int")
                if self.var_types[index] is None:
                    self.var_types[index] = "int"

    def collect_declarations(self, root: Element) -> None:
        """Types an export kept in the flowc namespace (exporter.py): they win over inference."""
        kept = [c for c in root.children if c.namespace == FLOWC_NS]
        for record in (c for c in kept if c.tag == "record"):
            record_fields = self.records.setdefault(
                flow_name(record.attrs.get("name", ""), "T"), {}
            )
            for name, ty in _declared_fields(record):
                if ty is not None:
                    record_fields[name] = ty
        for data in self.walk(root, "data"):
            declared = data.attrs.get(f"{FLOWC_NS} type")
            if declared and data.attrs.get("id") in self.var_types:
                self.var_types[data.attrs["id"]] = declared
        for effect in (c for c in kept if c.tag == "effect"):
            typed = self.effects.setdefault(flow_name(effect.attrs.get("name", ""), "e"), {})
            typed.update(_declared_fields(effect))
        for event in (c for c in kept if c.tag == "event"):
            name = event_flow_name(event.attrs.get("name", ""))
            fields = self.events.setdefault(name, {})
            if event.attrs.get(f"{FLOWC_NS} internal") == "true":
                self.internal_events.add(name)
            for name, ty in _declared_fields(event):
                fields[name] = ty
                self.declared_fields.add(name)

    def data_failures(self, root: Element) -> tuple[str | None, list[Element]]:
        """The `<data>` whose value is not an expression: SCXML leaves each unset and raises
        error.execution when the document starts. That is the first entry of the top-level
        initial state (its id is returned with them), provided nothing enters it again."""
        failing = [
            data
            for data in self.walk(root, "data")
            if _syntax_error(self.data_source(data) or "0") and not self.bound_late(data)
        ]
        top = self.start_state
        if not failing or top is None:
            if failing:
                where = next(iter(self.initial_children(root, None)), "the initial state")
                for data in failing:
                    self.error(
                        "E410",
                        "a `<data>` value that is not an expression raises error.execution "
                        f"at start, and `{where}` (where flowc raises it) is entered again",
                        data,
                    )
            return None, []
        return top, failing

    def retype_overwritten_data(self) -> None:
        """A variable whose `<data>` value the start overwrites first of all (the first action
        of the start state's entry assigns it, from an expression that does not read it)
        holds that value's type: nothing reads its initial value, which is left out. SCXML
        variables are untyped (a number first, a target string next); flowc's have one type."""
        if self.start_state is None or self.root.find("script"):
            return  # (a top-level script runs before the start state's entry)
        blocks = self.states[self.start_state].element.find("onentry")
        first = blocks[0].children[0] if blocks and blocks[0].children else None
        if first is None or first.tag != "assign":
            return
        var = first.attrs.get("location", "").strip()
        source = first.attrs.get("expr") or first.text
        mentions = re.compile(rf"\b{re.escape(var)}\b").search
        # (a `<data>` bound late in the start state gets its value before the entry runs)
        data_read = any(mentions(self.data_source(d)) for d in self.walk(self.root, "data"))
        if var not in self.var_types or not source or mentions(source) or data_read:
            return
        names = Names({k: flow_name(k, "v") for k in self.var_types}, "")
        found = self.type_of(source, names)
        if _clash(self.var_types[var], found):
            self.var_types[var] = found
            self.unread_defaults.add(var)

    def bound_late(self, data: Element) -> bool:
        """Whether a `<data>` gets its value when its state is first entered (`binding="late"`,
        in a state's `<datamodel>`) rather than when the document starts."""
        if self.root.attrs.get("binding") != "late":
            return False
        return not any(data is d for top in self.root.find("datamodel") for d in top.children)

    def late_binding(self, element: Element, sid: str) -> str | None:
        """The first entry of a state whose `<datamodel>` binds late: each `<data>` gets its
        value (error.execution for one that is not an expression), once, flagged by a context
        field of the importer's (`bound_STATE`)."""
        values: list[str] = []
        for datamodel in element.find("datamodel"):
            for data in datamodel.find("data"):
                source = self.data_source(data)
                if data.attrs.get("id") in self.var_types and source:
                    values.append(self.assignment(data.attrs["id"], source, data) or "")
                    self.failed = False
        if not any(values):
            return None
        flag = self.late_flags.setdefault(sid, self.unique_field(f"bound_{self.states[sid].name}"))
        return f"if not {flag} {{ {'; '.join(v for v in values if v)}; {flag} = true }}"

    def unique_field(self, name: str) -> str:
        """A context field name no variable of the document has."""
        taken = {flow_name(v, "v") for v in self.var_types} | set(self.late_flags.values())
        while name in taken:
            name += "_"
        return name

    def entered_once(self, root: Element) -> str | None:
        """The top-level initial state when only the start enters it (no transition targets it,
        or a state inside it from outside), else None: its first entry is the start."""
        top = next(iter(self.initial_children(root, None)), None)
        if top is None:
            return None
        for transition in self.walk(root, "transition"):
            for target in transition.attrs.get("target", "").split():
                inside = target == top or (
                    target in self.states and self.is_descendant(target, top)
                )
                source = self.source_of(transition)
                from_inside = source is not None and (
                    source == top or self.is_descendant(source, top)
                )
                if target == top or (inside and not from_inside):
                    return None
        return top

    def source_of(self, transition: Element) -> str | None:
        """The id of the state a `<transition>` belongs to (None for an initial's)."""
        for sid, info in self.states.items():
            if any(t is transition for t in info.element.find("transition")):
                return sid
        return None

    def is_record_field(self, base: Expr, key: str) -> bool:
        """Whether `base` holds a value of a declared record type with the field `key`."""
        return key in self.records.get(self.declared_type(base) or "", {})

    def declared_type(self, expr: Expr) -> str | None:
        """The type an export declared for `expr` (a variable, a payload field, a record's
        field, an item of either), without its default or `?`; None when not declared."""
        ty: str | None = None
        if expr.op == "ctx":
            ty = self.var_types.get(self.variable_of(str(expr.value)))
        elif expr.op == "event":
            found = {fields.get(str(expr.value)) for fields in self.events.values()} - {None}
            ty = found.pop() if len(found) == 1 else None
        elif expr.op == "attr" and expr.args:
            record = self.records.get(self.declared_type(expr.args[0]) or "", {})
            ty = record.get(str(expr.value))
        elif expr.op == "index" and expr.args:
            ty = _item_type(self.declared_type(expr.args[0]))
        elif expr.op == "call" and expr.value == "coalesce" and expr.args:
            ty = self.declared_type(expr.args[0])
        if ty is None:
            return None
        return ty.partition("=")[0].strip().removesuffix("?")

    def type_of(self, text: str, names: Names) -> str | None:
        try:
            return _infer(translate(text, Names(dict(names.variables), "")), self.var_types, names)
        except Refusal:
            return None

    def walk(self, element: Element, tag: str) -> Iterator[Element]:
        for child in element.children:
            if child.tag == tag:
                yield child
            yield from self.walk(child, tag)

    # ---- writing --------------------------------------------------------------------------

    def write_header(self, root: Element) -> str:
        lines = [f"# {c}" for c in self.document.preamble]
        name = flow_name(root.attrs.get("name") or Path(self.path).stem or "scxml", "f")
        title = root.attrs.get(f"{FLOWC_NS} title")
        lines.append(f"flow {name} {literal_text(title)}" if title else f"flow {name}")
        if root.attrs.get(f"{FLOWC_NS} unhandled") != "refuse":
            lines.append("# SCXML discards the events a state does not handle.")
            lines.append("unhandled ignore")
        for record, typed in self.records.items():
            lines.append(f"type {record} {{")
            lines.extend(f"  {name}: {ty}" for name, ty in typed.items())
            lines.append("}")
        lines.extend(self.event_declarations())
        context = self.context_fields()
        for datamodel in self.walk(self.root, "datamodel"):
            lines.extend(f"# {c}" for c in datamodel.comments)
        if context:
            lines.append("context {")
            lines.extend(context)
            lines.append("}")
        return "\n".join(lines) + "\n\n"

    def event_declarations(self) -> list[str]:
        """The `event` and `effect` lines of the flow."""
        lines: list[str] = []
        for event, fields in self.events.items():
            if event.startswith("done.state."):
                continue
            params = ", ".join(
                f"{f}: {t}"
                if f in self.declared_fields and t
                else f"{f}: {_FIELD_DEFAULTS.get(f) or _with_default(t)}"
                for f, t in fields.items()
            )
            internal = "internal " if event in self.internal_events else ""
            lines.append(
                f"{internal}event {event}({params})" if params else f"{internal}event {event}"
            )
        for effect, fields in self.effects.items():
            params = ", ".join(f"{f}: {t or 'json'}" for f, t in fields.items())
            lines.append(f"effect {effect}({params})" if params else f"effect {effect}")
        if self.host_sends():
            lines.append(f"effect {SEND_EFFECT}(name: str, delay_ms: int, id: str, data: json)")
            if "cancel" in self.features:
                lines.append(f"effect {CANCEL_EFFECT}(id: str)")
        if "log" in self.features:
            lines.append(f"effect {LOG_EFFECT}(label: str, value: json)")
        return lines

    def context_fields(self) -> list[str]:
        """The lines inside the flow's `context { ... }`: one per variable."""
        context: list[str] = []
        for var, ty in self.var_types.items():
            default = self.data_default(var)
            if default is None and ty in self.records:
                # A record with no value: the exported flow's start input, as declared (a
                # zero value of a record type does not exist, and `none` would bar its fields).
                context.append(f"  {flow_name(var, 'v')}: {ty}")
            elif default is None:
                context.append(f"  {flow_name(var, 'v')}: {_with_default(ty)}")
            else:
                context.append(f"  {flow_name(var, 'v')}: {ty or 'json'} = {default}")
        if self.uses_sessionid:
            context.append(f"  sessionid: str = {literal_text(self.session_id)}")
        context.extend(f"  {flag}: bool = false" for flag in self.late_flags.values())
        return context

    @property
    def session_id(self) -> str:
        """`_sessionid`: the flow's name, unless the host starts the instance with another."""
        return flow_name(self.root.attrs.get("name") or Path(self.path).stem or "scxml", "f")

    @property
    def uses_sessionid(self) -> bool:
        return "_sessionid" in self.document.text or self.names.reads_session

    def data_default(self, var: str) -> str | None:
        if var in self.unread_defaults:
            return None
        for data in self.walk(self.root, "data"):
            if data.attrs.get("id") != var or self.bound_late(data):
                continue
            source = self.data_source(data)
            if not source or _syntax_error(source):
                return None  # unset; a value that is not an expression fails at start
            expr = self.expr(source, data)
            if expr is None:
                return None
            expr = _fold_session(expr, self.session_id)
            if not _constant(expr):
                self.features.add("computed-data")
                self.error(
                    "E414",
                    f"the initial value of `{var}` is not a constant",
                    data,
                    "flowc context defaults are constants; assign it in the initial state's "
                    "entry instead",
                )
                return None
            return expr_text(expr)
        return None

    def write_states(self, element: Element, parent: str | None, indent: str) -> str:
        out: list[str] = []
        initial = self.initial_children(element, parent)
        for child in element.children:
            if child.tag not in _STATE_TAGS:
                continue
            sid = self.id_of(child)
            info = self.states.get(sid)
            if info is None:
                continue
            out.extend(f"{indent}# {c}" for c in child.comments)
            if info.kind == "history":
                out.append(indent + self.write_history(child))
                continue
            head = self.state_head(child, info, initial=sid in initial, nested=parent is not None)
            body = self.write_body(child, sid, indent + "  ")
            if body:
                out.append(f"{head} {{".join([indent, ""]))
                out.extend(body)
                out.append(indent + "}")
            else:
                out.append(indent + head)
        return "\n".join(out) + ("\n" if out else "")

    def state_head(self, element: Element, info: _StateInfo, *, initial: bool, nested: bool) -> str:
        """`[initial] [final|parallel] state NAME [with DONE_DATA]`."""
        modifiers = []
        if initial:
            modifiers.append("initial")
        if info.kind == "final":
            modifiers.append("final")
        if info.kind == "parallel":
            self.features.add("parallel")
            modifiers.append("parallel")
        if info.kind == "state" and nested:
            self.features.add("compound")
        head = " ".join([*modifiers, "state", info.name])
        if info.kind == "final" and not self.done_data_fails(element):
            carried = self.done_data(element)
            if carried is not None:
                self.features.add("donedata")
                head += f" with {carried}"
        return head

    def write_history(self, element: Element) -> str:
        self.features.add("history")
        info = self.states[self.id_of(element)]
        deep = element.attrs.get("type", "shallow") == "deep"
        text = f"history {'deep ' if deep else ''}{info.name}"
        for transition in element.find("transition"):
            targets = transition.attrs.get("target", "").split()
            if len(targets) != 1 or targets[0] not in self.states:
                self.error("E413", "a history default needs one known target", transition)
                continue
            text += f" -> {self.states[targets[0]].name}"
            actions = self.actions(transition.children)
            if actions:
                text += f" do {'; '.join(actions)}"
        return text

    def write_body(self, element: Element, sid: str, indent: str) -> list[str]:
        lines = [
            f"{indent}{keyword_} do {'; '.join(actions)}"
            for keyword_ in ("entry", "exit")
            if (actions := self.entry_exit_actions(element, sid, keyword_))
        ]
        earlier: list[Element] = []
        for transition in element.find("transition"):
            lines.extend(f"{indent}# {c}" for c in transition.comments)
            children = self.pushed_to(transition, element, sid, earlier)
            self.guard_errors = _guard_errors(transition, earlier)
            earlier.append(transition)
            self.reenter_target = bool(children)
            rule = self.write_transition(transition, sid)
            self.reenter_target = False
            self.guard_errors = 0
            if rule and children:
                for child in children:
                    self.pushed.setdefault(child, []).append(rule)
            elif rule:
                lines.append(indent + rule)
        lines.extend(indent + rule for rule in self.pushed.pop(sid, []))
        inner = self.write_states(element, sid, indent)
        if sid in self.initial_rules:
            lines.append(indent + self.initial_rules[sid])
        if inner:
            lines.extend(inner.rstrip("\n").split("\n"))
        return lines

    def entry_exit_actions(self, element: Element, sid: str, keyword_: str) -> list[str]:
        """The actions of a state's `<onentry>`s (`keyword_` "entry") or `<onexit>`s ("exit");
        the start state's entry also raises the errors of the data SCXML fails to set."""
        tag = "onentry" if keyword_ == "entry" else "onexit"
        actions: list[str] = []
        if tag == "onentry" and sid == self.start_errors[0]:
            actions.extend(self.fails() for _ in self.start_errors[1])
            self.failed = False
        # The start's entry runs before any event: `_event` is not bound yet.
        self.names.event_unbound = tag == "onentry" and sid == self.start_state
        if self.names.event_unbound:
            # The top-level scripts run when the document loads: first of all.
            for script in self.root.find("script"):
                actions.extend(self.actions([script]))
        binding = self.late_binding(element, sid) if tag == "onentry" else None
        if binding is not None:
            actions.append(binding)
        for block in element.find(tag):
            actions.extend(self.actions(block.children))
        self.names.event_unbound = False
        if keyword_ == "entry" and self.done_data_fails(element):
            # SCXML evaluates the done data once the entry actions have run: one it cannot
            # evaluate raises error.execution (before the done event, which has no data).
            actions.append(self.fails())
        return actions

    def done_without_data(self, descriptor: str) -> bool:
        """Whether `descriptor` names the done event of a state whose final children carry no
        done data (none declared, or done data SCXML cannot evaluate: the event is sent
        without it). A parallel state's done event never carries data."""
        info = self.states.get(descriptor.removeprefix("done.state."))
        if not descriptor.startswith("done.state.") or info is None:
            return False
        if info.kind == "parallel":
            return True
        finals = [self.states[c].element for c in info.children if self.states[c].kind == "final"]
        return all(not f.find("donedata") or self.done_data_fails(f) for f in finals)

    def done_data_fails(self, final: Element) -> bool:
        """Whether the `<donedata>` of a final state is one SCXML cannot evaluate (a `<param>`
        naming an undeclared location or with an expression that is not one, a `<content>`
        whose expression is not one); any other done data is refused (E418)."""
        for done in final.find("donedata"):
            for child in done.children:
                location = child.attrs.get("location")
                source = child.attrs.get("expr", "")
                if child.tag == "param" and location is not None:
                    if not location.isidentifier() or location not in self.var_types:
                        return True
                elif child.tag in ("param", "content") and source and _syntax_error(source):
                    return True
        return False

    def done_data(self, final: Element) -> str | None:
        """`<donedata>` of `<param name expr|location>`s: `with {"name": expr, ...}` (the
        payload of the parent's done event); a lone `<content>` is `_event.data` as a whole
        (`content_done_data`)."""
        pairs: list[str] = []
        for done in final.find("donedata"):
            if [c.tag for c in done.children] == ["content"] and not done.children[0].children:
                return self.content_done_data(done.children[0])
            for child in done.children:
                name = child.attrs.get("name", "")
                if child.tag != "param" or not name.isidentifier():
                    self.error(
                        "E418",
                        "done data other than named <param>s or one <content> is not supported",
                        child,
                        "flowc's done events carry named fields: "
                        '`final state X with {"name": value}`, or `_event.data` as one value',
                    )
                    return None
                source = child.attrs.get("location") or child.attrs.get("expr", "")
                value = self.expr(source, child)
                if value is None:
                    return None
                pairs.append(f"{literal_text(name)}: {expr_text(value)}")
        return "{" + ", ".join(pairs) + "}" if pairs else None

    def content_done_data(self, content: Element) -> str | None:
        """`<donedata><content>`: the done event's `_event.data` as a whole, the field
        `scxml_data` (as a send's `<content>`); a map with name keys also gives its entries
        as fields, as params do."""
        value = self.content_value(content)
        if value is None:
            return None
        self.used.append((None, value))
        pairs = [f"{literal_text(EVENT_DATA_FIELD)}: {expr_text(value)}"]
        keys = value.args[0::2] if value.op == "map" else ()
        if keys and all(_field_key(k) for k in keys):
            for key, item in zip(keys, value.args[1::2], strict=True):
                pairs.append(f"{literal_text(flow_name(str(key.value), 'p'))}: {expr_text(item)}")
        return "{" + ", ".join(pairs) + "}"

    def write_transition(self, transition: Element, sid: str) -> str | None:
        events = transition.attrs.get("event", "").split()
        cond = transition.attrs.get("cond")
        targets = transition.attrs.get("target", "").split()
        outer_fields = self.names.event_fields
        self.names.event_fields = set()
        self.names.data_is_none = bool(events) and all(map(self.done_without_data, events))
        try:
            return self.write_rule(transition, sid, events, cond, targets)
        finally:
            read, self.names.event_fields = self.names.event_fields, outer_fields
            self.names.data_is_none = False
            named = [event_flow_name(e.removesuffix(".*")) for e in events if e not in ("*", ".*")]
            if "*" in events or ".*" in events or not named:
                outer_fields |= read
            for event in named:
                meta = sorted(f for f in read if _is_meta(f) and f != EVENT_DATA_FIELD)
                if event.startswith("done.state.") and meta:
                    self.error(
                        "E416",
                        f"`_event.{meta[0].removeprefix('scxml_')}` read in a rule for `{event}`",
                        transition,
                        "flowc's done.state events carry no such field",
                    )
                    continue
                for name in sorted(read):
                    self.events.setdefault(event, {}).setdefault(name, None)
                self.rule_reads.append((event, read))

    def write_rule(
        self, transition: Element, sid: str, events: list[str], cond: str | None, targets: list[str]
    ) -> str | None:
        guard = ""
        expr = self.condition(cond, transition) if cond else None
        # The conditions before this rule that are not expressions were evaluated (and raised
        # error.execution) for the event it takes, first (`_guard_errors`).
        actions = [self.fails() for _ in range(self.guard_errors)]
        self.failed = False
        actions += self.actions(transition.children)
        if len(targets) > 1:
            self.features.add("multiple-targets")
            self.error("E419", "a transition with several targets is not supported", transition)
            return None
        if targets and targets[0] not in self.states:
            self.error("E413", f"unknown target state `{targets[0]}`", transition)
            return None
        if cond:
            if expr is None:
                return None
            guard = f" if {expr_text(self.truth(expr))}"
        if targets:
            target = self.states[self.across_regions(sid, targets[0])].name
            internal = transition.attrs.get("type") == "internal"
            descendant = self.is_descendant(targets[0], sid)
            if targets[0] == sid or (descendant and (not internal or self.reenter_target)):
                target += " reenter"
        else:
            self.features.add("targetless")
            target = "self"
        do = f" do {'; '.join(actions)}" if actions else ""
        code = transition.attrs.get(f"{FLOWC_NS} reject")
        if code is not None and not targets and not actions and events:
            return self.reject_rule(transition, events, guard, code)
        if transition.attrs.get(f"{FLOWC_NS} direct") == "true" and targets:
            return f"{guard.strip()} -> {target}{do}".strip()
        if not events:
            self.features.add("eventless")
            return f"always{guard} -> {target}{do}"
        names = self.event_patterns(events)
        return f"on {_SEP.join(names)}{guard} -> {target}{do}"

    def reject_rule(
        self, transition: Element, events: list[str], guard: str, code: str
    ) -> str | None:
        """A rejection an export kept in the flowc namespace: `on E [if G] reject CODE "..."
        [with DATA]`."""
        message = literal_text(transition.attrs.get(f"{FLOWC_NS} message", ""))
        names = self.event_patterns(events)
        data = transition.attrs.get(f"{FLOWC_NS} data")
        carried = self.expr(data, transition) if data is not None else None
        if data is not None and carried is None:
            return None
        with_data = f" with {expr_text(carried)}" if carried is not None else ""
        return f"on {_SEP.join(names)}{guard} reject {code} {message}{with_data}"

    def across_regions(self, source: str, target: str) -> str:
        """The state a rule enters for an SCXML target in another region of a parallel state
        than its source. SCXML leaves the parallel state and enters it again (every other
        region in its default state); flowc refuses a rule across regions (E134), but when the
        target is where its region starts anyway, entering the parallel state is the same."""
        up = self.states[target].parent
        while up is not None:
            if self.states[up].kind == "parallel" and self.is_descendant(source, up):
                region = next(
                    k
                    for k in self.states[up].children
                    if k == target or self.is_descendant(target, k)
                )
                in_region = source == region or self.is_descendant(source, region)
                if not in_region and self.entered_by_default(region, target):
                    self.features.add("cross-region")
                    return up
                return target
            up = self.states[up].parent
        return target

    def entered_by_default(self, state: str, target: str) -> bool:
        """Whether entering `state` enters `target` (a descendant) through default entries."""
        while state != target:
            info = self.states[state]
            below = [k for k in info.children if k == target or self.is_descendant(target, k)]
            if not below:
                return False
            if info.kind != "parallel" and below[0] not in self.initial_children(
                info.element, state
            ):
                return False
            state = below[0]
        return True

    def pushed_to(
        self, transition: Element, element: Element, sid: str, earlier: list[Element]
    ) -> list[str]:
        """The children a `type="internal"` transition of a compound state is written in.

        SCXML's internal transition to a descendant leaves the active states below its source
        but not the source itself; a flowc rule on a compound state leaves the state. Written
        as `-> T reenter` on each child, after the child's own rules, it leaves only what is
        below the source, and is tried where SCXML tries it: unless an earlier transition of
        the source takes some of the same events (it must stay first), or a child is final
        (a final state has no rules). Empty: written on the source."""
        targets = transition.attrs.get("target", "").split()
        if (
            transition.attrs.get("type") != "internal"
            or element.tag != "state"
            or len(targets) != 1
            or targets[0] not in self.states
            or not self.is_descendant(targets[0], sid)
        ):
            return []
        kids = [c for c in element.children if c.tag in ("state", "parallel", "final")]
        if any(c.tag == "final" for c in kids):
            return []
        events = transition.attrs.get("event", "").split()
        if any(_overlap(events, other.attrs.get("event", "").split()) for other in earlier):
            return []
        return [self.id_of(c) for c in kids]

    def is_descendant(self, sid: str, ancestor: str) -> bool:
        up = self.states[sid].parent
        while up is not None:
            if up == ancestor:
                return True
            up = self.states[up].parent
        return False

    def event_patterns(self, descriptors: list[str]) -> list[str]:
        names: list[str] = []
        for descriptor in descriptors:
            if descriptor in ("*", ".*"):
                self.features.add("wildcard")
                names.append("\0*\0")
                continue
            descriptor = descriptor.removesuffix(".*")
            name = event_flow_name(descriptor)
            if name.startswith("done.state."):
                self.features.add("done-events")
            else:
                self.events.setdefault(name, {})
            names.append(name)
            # SCXML descriptors match by prefix of dotted tokens: `error` matches
            # `error.execution`, which flowc writes as a separate `error.*`.
            names.append(f"\0{name}.*\0")
        return names

    # ---- executable content ---------------------------------------------------------------

    def actions(self, elements: list[Element]) -> list[str]:
        return self.block(elements)[0]

    def block(self, elements: list[Element]) -> tuple[list[str], bool]:
        """The actions of `elements`, and whether one of them fails (SCXML stops a block at
        its first error: what follows never runs)."""
        out: list[str] = []
        for i, element in enumerate(elements):
            self.failed = False
            if element.tag == "foreach":
                text, stops = self.foreach(element, elements[i + 1 :])
            else:
                text = self.action(element)
                stops = self.failed
            if text:
                out.append(text)
            if stops:
                self.failed = False
                return out, True
        return out, False

    def later(self, render: Callable[[], str]) -> str:
        """An action whose text depends on the fields its event ends up with (the `_event`
        fields some rule reads): written once every rule has been read."""
        self.deferred.append(render)
        return f"\x01{len(self.deferred) - 1}\x01"

    def variable_of(self, field_name: str) -> str:
        """The `<data>` id whose context field is `field_name`."""
        for var, name in self.names.variables.items():
            if name == field_name:
                return var
        return field_name

    def raise_text(self, event: str, args: list[tuple[str, str]], kind: str) -> str:
        """`raise event(args)`, with the `_event` fields the event declares: `type` (kind:
        internal or platform) and `sendid` when `args` name one."""
        fields = self.events.get(event, {})
        extra = [(meta_field("type"), literal_text(kind))]
        written = [(k, v) for k, v in [*args, *extra] if not _is_meta(k) or k in fields]
        if not written:
            return f"raise {event}"
        return f"raise {event}(" + ", ".join(f"{k}: {v}" for k, v in written) + ")"

    def fails(self, sendid: str | None = None) -> str:
        """An element SCXML would fail to run: it raises error.execution (the block stops);
        a `<send>` that fails carries its send id (`_event.sendid`)."""
        self.features.add("error.execution")
        self.events.setdefault("error.execution", {})
        self.failed = True
        args = [(meta_field("sendid"), literal_text(sendid))] if sendid is not None else []
        return self.later(lambda: self.raise_text("error.execution", args, "platform"))

    def action(self, element: Element) -> str | None:
        tag = element.tag
        if tag == "assign":
            return self.assign(element)
        if tag == "raise":
            self.features.add("raise")
            event = event_flow_name(element.attrs.get("event", ""))
            self.events.setdefault(event, {})
            return self.later(lambda: self.raise_text(event, [], "internal"))
        if tag == "log":
            self.features.add("log")
            label = element.attrs.get("label", "")
            value = self.expr(element.attrs["expr"], element) if "expr" in element.attrs else None
            shown = "none" if value is None else expr_text(value)
            return f"emit {LOG_EFFECT}(label: {literal_text(label)}, value: {shown})"
        if tag == "send":
            return self.send(element)
        if tag == "cancel":
            return self.cancel(element)
        if tag == "if":
            return self.if_action(element)
        if tag == "foreach":  # inside an `<if>`: the rest of the block is not the branch's
            return self.foreach(element, [])[0]
        if tag == "script":
            return self.script(element)
        self.error("E412", "not executable content flowc supports", element)
        return None

    def script(self, element: Element) -> str | None:
        """`<script>`: its assignments, each as an `<assign>` (the script stops at the first
        that fails, as the block does)."""
        done: list[str] = []
        for var, source in _statements(element):
            text = self.assignment(var, source, element)
            if text:
                done.append(text)
            if self.failed:
                break
        return "; ".join(done) or None

    def assign(self, element: Element) -> str | None:
        """`<assign location expr>`: `var = value` (`append` for a map added to a list)."""
        self.features.add("assign")
        source = element.attrs.get("expr") or element.text
        return self.assignment(element.attrs.get("location", ""), source, element)

    def assignment(self, target: str, source: str, element: Element) -> str | None:
        """`target = source`, read from `element` (an `<assign>` or a `<script>`)."""
        if self.fails_at_run_time(target, source):
            # SCXML raises error.execution for an assignment that cannot be made (an
            # undeclared location, an expression that is not one).
            return self.fails()
        try:
            var = location(target, self.names)
        except Refusal as refusal:
            self.refused(refusal, element)
            return None
        value = self.expr(source, element) if source else None
        if value is None:
            return None
        declared = self.var_types.get(self.variable_of(var))
        found = _infer(value, self.var_types, self.names)
        if "." not in var and _clash(declared, found):
            self.error(
                "E410",
                f"`{var}` holds `{declared}` values and is assigned a `{found}`",
                element,
                "flowc variables have one type; use one variable per kind of value",
            )
            return None
        self.used.append((var, value))
        item = _appended_map(var, value)
        if item is not None:
            # `append` gives the literal its type from the list (a record's, say)
            return f"append({var}, {expr_text(item)})"
        return f"{var} = {expr_text(value)}"

    def host_sends(self) -> bool:
        """Whether some send goes to the host (`emit scxml_send`): one with a computed event
        name (`eventexpr`), which a scheduled event of the runtime cannot name."""
        return "send" in self.features and "computed-event" in self.features

    def cancel(self, element: Element) -> str | None:
        """`<cancel sendid>` or `<cancel sendidexpr>`: `cancel ID` (the runtime's scheduled
        events), and the host's effect as well when the host has sends of its own."""
        self.features.add("cancel")
        if "sendid" in element.attrs:
            sendid = literal_text(element.attrs["sendid"])
        else:
            expr = self.expr(element.attrs.get("sendidexpr", ""), element)
            if expr is None:
                return None
            sendid = expr_text(expr)
        host = f"; emit {CANCEL_EFFECT}(id: {sendid})"
        return self.later(lambda: f"cancel {sendid}" + (host if self.host_sends() else ""))

    def foreach(self, element: Element, rest: list[Element]) -> tuple[str | None, bool]:
        """`<foreach array item index>`: `for item, index in array { … }`, and whether the
        block stops there. SCXML raises error.execution (and runs none of the loop) for an item
        or index that is not a legal variable name and for an array that is not one; an error
        in the body stops the loop and the block in its first round, which is written out as
        that round, with the rest of the block as what happens for an empty array."""
        self.features.add("foreach")
        item, index = element.attrs.get("item", ""), element.attrs.get("index")
        if not (element.attrs.get("array") and item):
            return None, False  # refused by check_elements (E415)
        if not _legal_variable(item) or (index is not None and not _legal_variable(index)):
            return self.fails(), True
        source = element.attrs.get("array", "")
        if _syntax_error(source):
            return self.fails(), True
        array = self.expr(source, element)
        if array is None:
            return None, False
        listed = _infer(array, self.var_types, self.names)
        if listed is not None and not listed.startswith("list["):
            return self.fails(), True
        item_var = self.names.variables[item]
        first = Expr(op="index", args=(array, Expr(op="lit", value=0)))
        self.used.append((item_var, first))
        index_var = None if index is None else self.names.variables[index]
        body, body_fails = self.block(element.children)
        array_text = expr_text(array)
        if body_fails:
            round_ = [f"{item_var} = {expr_text(first)}"]
            if index_var is not None:
                round_.append(f"{index_var} = 0")
            after = self.actions(rest)
            text = f"if len({array_text}) != 0 {{ {'; '.join(round_ + body)} }}"
            if after:
                text += f" else {{ {'; '.join(after)} }}"
            return text, True
        head = item_var if index_var is None else f"{item_var}, {index_var}"
        return f"for {head} in {array_text} {{ {'; '.join(body)} }}".replace("{  }", "{ }"), False

    def if_action(self, element: Element) -> str | None:
        self.features.add("if")
        branches: list[tuple[str | None, list[str]]] = []
        guard: str | None = self.guard_text(element.attrs.get("cond", ""), element)
        current: list[str] = []
        stopped = False
        for child in element.children:
            if child.tag in ("elseif", "else"):
                branches.append((guard, current))
                current, stopped = [], False
                guard = (
                    self.guard_text(child.attrs.get("cond", ""), child)
                    if child.tag == "elseif"
                    else None
                )
                continue
            if stopped:
                continue  # after an error in this branch (the rest of the block runs: flowc
                # has no conditional stop; docs/scxml.md)
            self.failed = False
            text = self.action(child)
            if text:
                current.append(text)
            stopped = self.failed
        branches.append((guard, current))
        self.failed = False
        return _if_chain(branches)

    def guard_text(self, cond: str, element: Element) -> str:
        expr = self.expr(cond, element) if cond else None
        return "false" if expr is None else expr_text(self.truth(expr))

    def truth(self, expr: Expr) -> Expr:
        """A condition as a flowc `bool`: Python reads a number, a string or a list as true
        when it is not zero or empty; flowc guards must be `bool` (E205), so that reading is
        written out (`n != 0`, `s != ""`, `len(xs) != 0`)."""
        if expr.op == "lit" and expr.value is None:
            return Expr(op="lit", value=False)
        if expr.op == "not":
            return Expr(op="not", args=(self.truth(expr.args[0]),))
        if expr.op in ("and", "or"):
            return Expr(op=expr.op, args=tuple(self.truth(a) for a in expr.args))
        ty = _infer(expr, self.var_types, self.names)
        if expr.op == "event":
            ty = ty or self.field_types.get(str(expr.value))
        if ty in ("int", "float"):
            zero = Expr(op="lit", value=0 if ty == "int" else 0.0)
            return Expr(op="!=", args=(expr, zero))
        if ty == "str":
            return Expr(op="!=", args=(expr, Expr(op="lit", value="")))
        if ty is not None and ty.startswith(("list", "map")):
            length = Expr(op="call", value="len", args=(expr,))
            return Expr(op="!=", args=(length, Expr(op="lit", value=0)))
        return expr

    def send(self, element: Element) -> str | None:
        """A `<send>`: to the session's external queue (a scheduled `send`; `emit scxml_send`
        for a computed event name), to its internal queue (`#_internal`: `raise`), or the
        error SCXML raises for it (error.execution: an invalid target or an unknown type;
        error.communication: a session that is not this one). A computed target or type is
        checked where it runs."""
        self.features.add("send")
        # The id first: SCXML stores it in `idlocation` before the send can fail, and the error
        # of a failed send carries it.
        start = self.send_id(element)
        if start is None:
            return None
        sendid, explicit, assigns = start
        try:
            processor = self.send_processor(element)
            if element.attrs.get("target", "") == HOST_TARGET:
                return assigns + (self.host_effect(element) or "")
            send = self.read_send(element, sendid, explicit, processor)
        except _SendRefused:
            return None
        except _SendFails:
            return assigns + self.fails(sendid)
        if processor is not None or send.delay.variable is not None:
            self.events.setdefault("error.execution", {})
        if send.address is not None:
            for error in ("error.execution", "error.communication"):
                self.events.setdefault(error, {})
        return assigns + self.later(lambda: self.send_checked(send))

    def send_id(self, element: Element) -> tuple[str, bool, str] | None:
        """The send's id, whether the document gives it (`id`, `idlocation`), and the action
        storing a made-up one in `idlocation` ("" if none); None when refused."""
        attrs = element.attrs
        sendid = attrs.get("id")
        explicit = sendid is not None or "idlocation" in attrs
        if sendid is not None:
            return sendid, explicit, ""
        sendid = self.new_send_id()
        if "idlocation" not in attrs:
            return sendid, explicit, ""
        try:
            var = location(attrs["idlocation"], self.names)
        except Refusal as refusal:
            self.refused(refusal, element)
            return None
        return sendid, explicit, f"{var} = {literal_text(sendid)}; "

    def send_expr(self, text: str, element: Element) -> Expr:
        """An expression of a `<send>`; a refused one (reported) refuses the send."""
        expr = self.expr(text, element)
        if expr is None:
            raise _SendRefused
        return expr

    def send_processor(self, element: Element) -> Expr | None:
        """The computed processor type (`typeexpr`), or None for the SCXML processor; a type
        flowc does not support refuses the send, an unknown one fails it."""
        attrs = element.attrs
        if "typeexpr" in attrs:
            self.features.add("computed-send-type")
            return self.send_expr(attrs["typeexpr"], element)
        kind = attrs.get("type", SCXML_PROCESSOR)
        if kind in OTHER_PROCESSORS:
            self.features.add("external-send")
            self.error("E409", f"the event I/O processor `{kind}` is not supported", element)
            raise _SendRefused
        if kind not in SCXML_PROCESSOR_NAMES:
            # SCXML: a type the processor does not support raises error.execution.
            raise _SendFails
        return None

    def read_send(
        self, element: Element, sendid: str, explicit: bool, processor: Expr | None
    ) -> _Send:
        """A `<send>` to the session itself, read: its address, event, data and delay."""
        attrs = element.attrs
        target = attrs.get("target", "")
        address = self.send_address(element, target)
        name = self.send_event_name(element, target, address)
        event = event_flow_name(attrs.get("event", "")) if name is None else ""
        fields = self.events.setdefault(event, {}) if name is None else {}
        data = self.send_data(element, fields)
        ok, whole = self.send_content(element, data, fields)
        if not ok:
            raise _SendRefused
        if whole is not None and name is None:
            self.type_whole_data(event, data, fields)
        delay = self.send_delay(element)
        if delay is None:
            raise _SendRefused
        return _Send(
            event=event,
            name=name,
            sendid=sendid,
            own_id=literal_text(sendid) if explicit else None,
            data=data,
            whole=whole,
            delay=delay,
            internal=target == "#_internal",
            address=address,
            processor=processor,
            choices=self.event_choices(element) if name is not None else [],
        )

    def event_choices(self, element: Element) -> list[tuple[str, str]]:
        """The event names an `eventexpr` that reads a variable may give, each declared:
        the constant strings the variable is ever given; empty when one is not a constant
        or not an event name (the host then sends what it computes)."""
        var = element.attrs.get("eventexpr", "").strip()
        if var not in self.var_types:
            return []
        values = [text for text, _ in self.delays_of(flow_name(var, "v"))]
        if not values or not all(_EVENT_NAME.fullmatch(v) for v in values):
            return []
        choices = [(v, event_flow_name(v)) for v in values]
        for _, event in choices:
            self.events.setdefault(event, {})
        return choices

    def send_address(self, element: Element, target: str) -> Expr | None:
        """The session a send goes to (`targetexpr`, `#_scxml_` + an id), or None for this
        session's own queues (no target, `#_internal`)."""
        if "targetexpr" in element.attrs:
            self.features.add("computed-send-target")
            return self.send_expr(element.attrs["targetexpr"], element)
        if target.startswith("#_scxml_"):
            return Expr(op="lit", value=target)
        if target and not target.startswith("#") and ":" not in target:
            # Not a URI nor a special target: SCXML raises error.execution (the target is
            # invalid) rather than sending.
            raise _SendFails
        if target not in ("", "#_internal"):
            self.features.add("external-send")
            self.error(
                "E409",
                f"sending to `{target}` is not supported",
                element,
                "flowc sends only to the session itself (no target, `#_internal`, "
                "`#_scxml_` + its session id)",
            )
            raise _SendRefused
        return None

    def send_event_name(self, element: Element, target: str, address: Expr | None) -> str | None:
        """The text of a computed event name (`eventexpr`), or None for a named event."""
        attrs = element.attrs
        if "eventexpr" not in attrs:
            return None
        self.features.add("computed-event")
        if target == "#_internal" or address is not None:
            self.error(
                "E410",
                "`eventexpr` is translated only for sends to the session's external queue",
                element,
                "flowc raises only declared events; give the event by name",
            )
            raise _SendRefused
        if attrs.get("namelist") or element.find("param") or element.find("content"):
            self.error("E410", "`eventexpr` with data is not supported", element)
            raise _SendRefused
        return expr_text(self.send_expr(attrs["eventexpr"], element))

    def send_data(self, element: Element, fields: dict[str, str | None]) -> list[tuple[str, str]]:
        """The send's fields, (name, expression text), from its `namelist` then its params,
        each field's type recorded in `fields` (the event's) when first known."""
        data: list[tuple[str, str]] = []
        for var in element.attrs.get("namelist", "").split():
            if var.isidentifier() and var not in self.var_types:
                raise _SendFails  # an undeclared name: error.execution
            expr = self.send_expr(var, element)
            fields.setdefault(flow_name(var, "v"), _infer(expr, self.var_types, self.names))
            data.append((flow_name(var, "v"), expr_text(expr)))
        for param in element.find("param"):
            field_name = flow_name(param.attrs.get("name", ""), "p")
            source = param.attrs.get("expr") or param.attrs.get("location", "")
            expr = self.send_expr(source, param)
            ty = _infer(expr, self.var_types, self.names)
            if fields.get(field_name) is None:
                fields[field_name] = ty
            data.append((field_name, expr_text(expr)))
        return data

    def type_whole_data(
        self, event: str, data: list[tuple[str, str]], fields: dict[str, str | None]
    ) -> None:
        """Record the type of the event's `_event.data` as a whole, when it is known."""
        ty = self.whole_type
        if data:  # the map of the params: typed when they share one type
            kinds = {fields.get(k) for k, _ in data}
            ty = f"map[str, {kinds.pop()}]" if len(kinds) == 1 and None not in kinds else None
        if ty is not None:
            self.data_types.setdefault(event, ty)

    def host_effect(self, element: Element) -> str | None:
        """A `<send>` to HOST_TARGET: `emit NAME(param: expr, ...)`, one of the flow's effects."""
        if "delay" in element.attrs or "delayexpr" in element.attrs:
            self.error("E410", "a delayed send to the host is not supported", element)
            return None
        name = flow_name(element.attrs.get("event", ""), "e")
        fields = self.effects.setdefault(name, {})
        data: list[str] = []
        for param in element.find("param"):
            field_name = flow_name(param.attrs.get("name", ""), "p")
            expr = self.expr(param.attrs.get("expr") or param.attrs.get("location", ""), param)
            if expr is None:
                return None
            if fields.get(field_name) is None:
                fields[field_name] = _infer(expr, self.var_types, self.names)
            data.append(f"{field_name}: {expr_text(expr)}")
        return f"emit {name}({', '.join(data)})" if data else f"emit {name}"

    def send_delay(self, element: Element) -> _Delay | None:
        """The delay of a send: `delay`, a constant `delayexpr`, or a `delayexpr` reading a
        variable only ever given constant durations; None when refused (E414)."""
        attrs = element.attrs
        if "delay" not in attrs and "delayexpr" not in attrs:
            return _Delay(0)
        self.features.add("delayed-send")
        raw = attrs.get("delay")
        if raw is None:
            expr = self.expr(attrs["delayexpr"], element)
            if expr is None:
                return None
            if expr.op == "ctx" and isinstance(expr.value, str):
                choices = self.delays_of(expr.value)
                if not choices:
                    self.error(
                        "E414",
                        f"`delayexpr` reads `{expr.value}`, which is not always assigned a "
                        "constant duration string",
                        element,
                    )
                    return None
                return _Delay(0, expr.value, choices)
            if expr.op != "lit" or not isinstance(expr.value, str):
                self.error(
                    "E414",
                    "`delayexpr` must be a constant duration string or a variable only "
                    "ever assigned such constants",
                    element,
                )
                return None
            raw = expr.value
        parsed = parse_delay(raw)
        if parsed is None:
            self.error(
                "E414",
                f"invalid delay `{raw}`",
                element,
                f"a CSS2 duration (`500ms`, `1.5s`) of at most {MAX_TIMER_MS // 86_400_000}d",
            )
            return None
        return _Delay(parsed)

    def send_checked(self, send: _Send) -> str:
        """A send's action: to its queue, checked first against a computed target or type."""
        if send.address is not None:
            text = self.addressed(send)
        elif send.internal:
            text = self.send_internal(send)
        else:
            text = self.send_external(send)
        if send.processor is not None:
            to = expr_text(send.processor)
            names = " or ".join(f"{to} == {literal_text(n)}" for n in SCXML_PROCESSOR_NAMES)
            text = f"if {names} {{ {text} }} else {{ {self.send_error(send)} }}"
        return text

    def send_error(self, send: _Send, event: str = "error.execution") -> str:
        """The error a send raises: a platform event carrying the send's id."""
        sendid = [(meta_field("sendid"), literal_text(send.sendid))]
        return self.raise_text(event, sendid, "platform")

    def send_internal(self, send: _Send) -> str:
        """A send to `#_internal`: a `raise` with the params, the whole data and the id."""
        self.features.add("raise")
        args = list(send.data)
        if send.whole is not None:
            args.append((EVENT_DATA_FIELD, send.whole))
        if send.own_id is not None:
            args.append((meta_field("sendid"), send.own_id))
        return self.raise_text(send.event, args, "internal")

    def send_external(self, send: _Send) -> str:
        """A send to the external queue; with a delay read from a variable, one send per
        duration it may hold, and error.execution for any other value (as in SCXML)."""
        delay = send.delay
        if delay.variable is None:
            return self.send_emit(send, delay.ms)
        branches = [
            f"{delay.variable} == {literal_text(text)} {{ {self.send_emit(send, ms)} }}"
            for text, ms in delay.choices
            if ms is not None
        ]
        if not branches:
            return self.send_error(send)
        return f"if {' elif '.join(branches)} else {{ {self.send_error(send)} }}"

    def send_emit(self, send: _Send, delay_ms: int) -> str:
        """The send to the external queue: a scheduled `send` of a named event (or of each
        name a computed one may take), else `emit scxml_send(...)` for the host; its data
        holds the `_event` fields the event declares."""
        items = list(send.data)
        declared = self.events.get(send.event, {})
        extra = [
            (EVENT_DATA_FIELD, send.whole),
            (meta_field("sendid"), send.own_id),
            (meta_field("origin"), expr_text(session_location())),
            (meta_field("origintype"), literal_text(SCXML_PROCESSOR)),
        ]
        for key, value in extra:
            if value is not None and key in declared:
                items.append((key, value))
                self.names.reads_session |= key == meta_field("origin")
        if send.name is None:
            return self.scheduled_send(send, items, delay_ms)
        if send.choices:
            branches = [
                f"{send.name} == {literal_text(value)} "
                f"{{ {self.send_emit(replace(send, event=event, name=None), delay_ms)} }}"
                for value, event in send.choices
            ]
            host = self.send_emit(replace(send, choices=[]), delay_ms)
            return f"if {' elif '.join(branches)} else {{ {host} }}"
        payload = "{" + ", ".join(f"{literal_text(k)}: {v}" for k, v in items) + "}"
        return (
            f"emit {SEND_EFFECT}(name: {send.name or literal_text(send.event)}, "
            f"delay_ms: {delay_ms}, id: {literal_text(send.sendid)}, data: {payload})"
        )

    def scheduled_send(self, send: _Send, items: list[tuple[str, str]], delay_ms: int) -> str:
        """A send of a named event to this session: a scheduled event of the runtime (SCXML's
        external queue), `as` the document's id only (sends without one must not replace
        each other). A delay of 0 is written as an expression: the runtime waits 1 ms, so the
        event still comes after everything the step raises."""
        args = ", ".join(f"{k}: {v}" for k, v in items)
        event = f"{send.event}({args})" if args else send.event
        delay = f"{delay_ms}ms" if delay_ms > 0 else "0 ms"
        named = f" as {literal_text(send.sendid)}" if send.own_id is not None else ""
        return f"send {event} after {delay}{named}"

    def delays_of(self, field_name: str) -> list[tuple[str, int | None]]:
        """The constant strings a variable is ever given (its `<data>` value and every
        `<assign>`), with their milliseconds (None: not a duration); empty when some value
        is not a constant string."""
        var = self.variable_of(field_name)
        sources = [
            self.data_source(d)
            for d in self.walk(self.root, "data")
            if d.attrs.get("id") == var and self.data_source(d)
        ]
        sources += [
            source for location, source in self.assignments(self.root) if location.strip() == var
        ]
        found: dict[str, int | None] = {}
        for source in sources:
            try:
                value = translate(source, Names({}, ""))
            except Refusal:
                return []
            if value.op != "lit" or not isinstance(value.value, str):
                return []
            found[value.value] = parse_delay(value.value)
        return list(found.items())

    def new_send_id(self) -> str:
        """An id for a send without one (`idlocation` stores it; a `<cancel>` may name it),
        unlike every id the document writes."""
        written = {send.attrs.get("id") for send in self.walk(self.root, "send")}
        while True:
            self.send_ids += 1
            sendid = f"send{self.send_ids}"
            if sendid not in written:
                return sendid

    def send_content(
        self, element: Element, data: list[tuple[str, str]], fields: dict[str, str | None]
    ) -> tuple[bool, str | None]:
        """(False, None) when refused, else the text of `_event.data` as a whole: the
        `<content>` (its `expr`, or its text read as a literal when it is one, else as a
        string with its white space normalised), the map of the params, or None when the send
        has no data. A content that is a map with name keys also gives its entries as fields
        (`_event.data['key']`), as params do."""
        contents = element.find("content")
        self.whole_type = None
        if not contents:
            if not data:
                return True, None
            return True, "{" + ", ".join(f"{literal_text(k)}: {v}" for k, v in data) + "}"
        self.features.add("send-content")
        content = contents[0]
        if data or len(contents) > 1 or content.children:
            self.error(
                "E416",
                "<content> is read as one value, without params, namelist or markup",
                content,
            )
            return False, None
        value = self.content_value(content)
        if value is None:
            return False, None
        keys = value.args[0::2] if value.op == "map" else ()
        if keys and all(_field_key(k) for k in keys):
            for key, item in zip(keys, value.args[1::2], strict=True):
                name = flow_name(str(key.value), "p")
                ty = _infer(item, self.var_types, self.names)
                if fields.get(name) is None:
                    fields[name] = ty
                data.append((name, expr_text(item)))
        self.used.append((None, value))
        self.whole_type = _infer(value, self.var_types, self.names)
        return True, expr_text(value)

    def content_value(self, content: Element) -> Expr | None:
        """The value of a `<content>`: its `expr` (None when refused), or its text read as a
        literal when it is one, else as a string with its white space normalised."""
        if "expr" in content.attrs:
            return self.expr(content.attrs["expr"], content)
        return _text_value(content.text)

    def addressed(self, send: _Send) -> str:
        """A send to a target known when it runs: `#_internal`, this session
        (`#_scxml_` + its id), another session (error.communication: flowc reaches no other
        session) or no target at all (error.execution)."""
        assert send.address is not None
        self.names.reads_session = True
        unreachable = self.send_error(send, "error.communication")
        if send.address.op == "lit" and isinstance(send.address.value, str):
            session = literal_text(send.address.value.removeprefix("#_scxml_"))
            own = self.send_external(send)
            return f"if sessionid == {session} {{ {own} }} else {{ {unreachable} }}"
        to = expr_text(send.address)
        return (
            f'if {to} == "#_internal" {{ {self.send_internal(send)} }} '
            f"elif {to} == {expr_text(session_location())} {{ {self.send_external(send)} }} "
            f'elif "#_" in {to} or ":" in {to} {{ {unreachable} }} '
            f"else {{ {self.send_error(send)} }}"
        )


def _declared_fields(element: Element) -> list[tuple[str, str | None]]:
    """The fields of a flowc declaration's `fields="name: type; ..."`, in order (the type
    None when not given)."""
    out: list[tuple[str, str | None]] = []
    for item in element.attrs.get("fields", "").split(";"):
        name, _, ty = item.partition(":")
        if name.strip():
            out.append((name.strip(), ty.strip() or None))
    return out


def _guard_errors(transition: Element, earlier: list[Element]) -> int:
    """How many of the `earlier` transitions of its state have a `cond` that is not an
    expression and are tried for every event `transition` takes (their descriptors cover its
    own; both eventless). SCXML evaluates such a condition as false and raises
    error.execution each time it tries it; a flowc guard raises nothing, so each is written
    as a `raise error.execution` first in the actions of the rules taken after trying it
    (docs/scxml.md)."""
    events = transition.attrs.get("event", "").split()
    count = 0
    for other in earlier:
        cond = other.attrs.get("cond")
        if cond is None or not _syntax_error(cond):
            continue
        tried = other.attrs.get("event", "").split()
        eventless = not events and not tried
        if eventless or (events and all(_covers(tried, e) for e in events)):
            count += 1
    return count


def _covers(descriptors: list[str], event: str) -> bool:
    """Whether the event descriptors match every event the descriptor `event` matches."""
    event = event.removesuffix(".*")
    for descriptor in descriptors:
        descriptor = descriptor.removesuffix(".*")
        if descriptor == "*" or event == descriptor or event.startswith(descriptor + "."):
            return True
    return False


class _NotReadable(Exception):
    """Why a `<data src>` file is not read (`_read_beside`)."""


def _read_beside(directory: Path, name: str) -> str:
    """The UTF-8 text of the regular file `name` (a plain name: no directory, not hidden) in
    `directory`, of at most MAX_DATA_FILE bytes. Opened without following a link and checked
    on the open file, so that what is read is what was checked."""
    if not _DATA_FILE_NAME.fullmatch(name):
        raise _NotReadable("not the name of a file beside the chart (no directory, not hidden)")
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(directory / name, flags)
    except OSError as exc:
        raise _NotReadable(f"not readable ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as opened:
        if not stat.S_ISREG(os.fstat(opened.fileno()).st_mode):
            raise _NotReadable("not a regular file")
        raw = opened.read(MAX_DATA_FILE + 1)
    if len(raw) > MAX_DATA_FILE:
        raise _NotReadable(f"larger than {MAX_DATA_FILE} bytes")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise _NotReadable("not UTF-8 text") from None


def _text_value(text: str) -> Expr:
    """The value of a `<content>` or `<data>` given as text: a Python literal is that value,
    anything else a string with its white space normalised."""
    text = " ".join(text.split())
    try:
        value = translate(text, Names({}, ""))
    except Refusal:
        return Expr(op="lit", value=text)
    return value if _constant(value) else Expr(op="lit", value=text)


def _statements(script: Element) -> list[tuple[str, str]]:
    """The assignments of a `<script>` (none for one that is refused: `check_script`)."""
    try:
        return script_assignments(script.text)
    except Refusal:
        return []


def _field_key(key: Expr) -> bool:
    """Whether a key of a `<content>` map names a payload field (a string that is a name)."""
    return key.op == "lit" and isinstance(key.value, str) and key.value.isidentifier()


def _syntax_error(text: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError):
        return True
    except (RecursionError, MemoryError):
        return False  # an expression too deep to read is refused where it is translated
    return False


def _texts(element: Element) -> str:
    """Every attribute value below `element`, for a quick textual check."""
    return " ".join(str(c.attrs) + _texts(c) for c in element.children)


def _if_chain(branches: list[tuple[str | None, list[str]]]) -> str | None:
    """`if/elif/else` text; an empty branch becomes the negated guard around what follows, as
    the action syntax has no empty block."""
    while branches and not branches[-1][1]:
        branches = branches[:-1]
    if not branches:
        return None
    parts: list[str] = []
    for i, (guard, actions) in enumerate(branches):
        head = "if" if i == 0 else "elif"
        if not actions:
            rest = _if_chain(branches[i + 1 :])
            assert rest is not None and guard is not None
            parts.append(f"{head} not ({guard}) {{ {rest} }}")
            break
        block = "{ " + "; ".join(actions) + " }"
        parts.append(f"else {block}" if guard is None else f"{head} {guard} {block}")
    return " ".join(parts)


_NUMBERS = {"int", "float"}
_SCALARS = frozenset({"int", "float", "str", "bool"})


def _clash(declared: str | None, found: str | None) -> bool:
    """Whether a variable of type `declared` cannot hold a value of type `found` (only plain
    scalars are compared: a `json` or optional variable holds more)."""
    if declared not in _SCALARS or found not in _SCALARS or declared == found:
        return False
    return {declared, found} != _NUMBERS


_TYPED_PAIRS = frozenset({"==", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/", "%"})
_ZERO = {"int": "0", "float": "0.0", "str": '""', "bool": "false"}


def _appended_map(var: str, value: Expr) -> Expr | None:
    """The map literal of `var = var + [{...}]` (how an export writes `append`), else None."""
    if value.op != "+" or len(value.args) != 2:
        return None
    listed, added = value.args
    if added.op != "list" or len(added.args) != 1 or added.args[0].op != "map":
        return None
    path: list[str] = []
    while listed.op == "attr" and listed.args:
        path.insert(0, str(listed.value))
        listed = listed.args[0]
    if listed.op != "ctx" or ".".join([str(listed.value), *path]) != var:
        return None
    return added.args[0]


def _item_type(ty: str | None) -> str | None:
    """The type of an item of a `list[T]` or a `map[str, T]`."""
    if ty is None:
        return None
    for head in ("list[", "map[str, "):
        if ty.startswith(head) and ty.endswith("]"):
            return ty[len(head) : -1]
    return None


def _with_default(ty: str | None) -> str:
    """`TYPE = DEFAULT` for a variable or payload field SCXML leaves unset: the zero value of
    a type the importer could infer (flowc values are typed, and an optional would need a
    check at every use), else `json = none`."""
    if ty is None or ty == "json":
        return "json = none"
    if ty.endswith("?"):
        return f"{ty} = none"
    if ty in _ZERO:
        return f"{ty} = {_ZERO[ty]}"
    if ty.startswith("list["):
        return f"{ty} = []"
    return f"{_optional(ty)} = none"


def _optional(ty: str | None) -> str:
    if ty is None or ty == "json" or ty.endswith("?"):
        return ty or "json"
    return f"{ty}?"


def _overlap(one: list[str], other: list[str]) -> bool:
    """Whether two transitions' event descriptors may match one event (both eventless, or a
    descriptor equal to, a prefix of, or `*` for the other's)."""
    if not one or not other:
        return not one and not other
    for a in one:
        for b in other:
            a, b = a.removesuffix(".*"), b.removesuffix(".*")
            if "*" in (a, b) or a == b or a.startswith(b + ".") or b.startswith(a + "."):
                return True
    return False


def _is_meta(field_name: str) -> bool:
    """Whether a payload field is one of the `_event` fields the importer fills."""
    return field_name == EVENT_DATA_FIELD or field_name in {
        meta_field(m) for m in EVENT_META_FIELDS
    }


def _fold_session(expr: Expr, session_id: str) -> Expr:
    """`expr` with `_sessionid` read as the flow's session id and the string concatenations
    that makes constant written out, for a `<data>` initial value (a constant in flowc)."""
    if expr.op == "ctx" and expr.value == "sessionid":
        return Expr(op="lit", value=session_id)
    if not expr.args:
        return expr
    args = tuple(_fold_session(a, session_id) for a in expr.args)
    left = args[0].value if args[0].op == "lit" else None
    right = args[-1].value if args[-1].op == "lit" else None
    if expr.op == "+" and isinstance(left, str) and isinstance(right, str):
        return Expr(op="lit", value=left + right)
    return Expr(op=expr.op, value=expr.value, args=args)


def _legal_variable(name: str) -> bool:
    """A name SCXML's Python datamodel can bind (`<foreach item>`): an identifier that is not
    a keyword nor one of the system variables."""
    return name.isidentifier() and not keyword.iskeyword(name) and not name.startswith("_")


def _constant(expr: Expr) -> bool:
    if expr.op == "lit":
        return True
    if expr.op in ("list", "map", "neg"):
        return all(_constant(a) for a in expr.args)
    return False


def _infer(expr: Expr, var_types: dict[str, str | None], names: Names) -> str | None:
    """A flowc type for `expr` where it is plain to see, else None (the caller uses json)."""
    op = expr.op
    if op == "lit":
        value = expr.value
        if isinstance(value, bool):
            return "bool"
        if isinstance(value, int):
            return "int"
        if isinstance(value, float):
            return "float"
        if isinstance(value, str):
            return "str"
        return None
    if op == "event" and _is_meta(str(expr.value)) and expr.value != EVENT_DATA_FIELD:
        return "str"
    if op == "ctx":
        for var, field_name in names.variables.items():
            if field_name == expr.value:
                return var_types.get(var)
        return "str" if expr.value == "sessionid" else None
    if op in BOOLEAN_RESULTS:
        return "bool"
    if op == "neg":
        return _infer(expr.args[0], var_types, names)
    if op in ARITHMETIC:
        # As the type checker types it (runtime/operators.py).
        rule = BINARY_OPERATORS[op]
        left = _infer(expr.args[0], var_types, names)
        right = _infer(expr.args[1], var_types, names)
        if left == right == "str":
            return "str" if rule.concatenates else None
        if left in ("int", "float") and right in ("int", "float"):
            return "float" if rule.always_float or "float" in (left, right) else "int"
        return None
    if op == "call":
        known = BUILTINS.get(str(expr.value))
        return None if known is None else known.result
    if op == "index":
        listed = _infer(expr.args[0], var_types, names)
        if listed is not None and listed.startswith("list["):
            return listed[len("list[") : -1]
        return None
    if op == "list":
        items = {_infer(a, var_types, names) for a in expr.args}
        if len(items) == 1 and None not in items:
            return f"list[{items.pop()}]"
        return None
    if op == "map" and expr.args:
        keys = {_infer(a, var_types, names) for a in expr.args[0::2]}
        values = {_infer(a, var_types, names) for a in expr.args[1::2]}
        if keys == {"str"} and len(values) == 1 and None not in values:
            return f"map[str, {values.pop()}]"
        return None
    return None
