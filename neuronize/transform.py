"""The rule abstraction: a rule looks at one parsed file and reports findings, some with a fix.

A rule subclasses :class:`Transform`, declares its id, name, safety, evidence and the byte tokens
that can reveal it, and defines libcst-style ``visit_<Node>`` / ``leave_<Node>`` methods. All the
enabled rules share one walk of one tree (see :mod:`neuronize.analysis.engine`); a rule calls
:meth:`Transform.fix`, :meth:`Transform.remove` or :meth:`Transform.report` and never edits,
prints or touches files itself. A new instance is made for every file, so nothing leaks between
files.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from dataclasses import dataclass, field
from typing import Any, ClassVar

import libcst as cst

from neuronize.analysis.context import FileContext
from neuronize.sources.kinds import CODE_KINDS, SourceKind

# Safety, Evidence, ImportRequest and Finding live in neuronize.types; the rules (and tests)
# import them from here, where they belong to the vocabulary of writing a rule.
from neuronize.types import (EFFORTS, SECTIONS, Evidence, Finding, ImportRequest, Note, Options, Safety, Target,
                             subject_of)

__all__ = ["DOC_HEADINGS", "Evidence", "Example", "Finding", "ImportRequest", "Replacement",
           "Report", "Reporter", "Safety", "Transform"]

DOC_HEADINGS = ("What it does", "Why on TorchNeuron", "Example", "Use instead", "Fix safety", "Evidence")
RULE_ID = re.compile(r"^NRN[1-9]\d\d$")
RULE_NAME = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")


@dataclass(frozen=True)
class Example:
    """A tiny before/after pair: documentation and a test at once.

    ``after=None`` means the rule reports on ``before`` and leaves it as it is; ``finds=False``
    means the rule has nothing to say about ``before`` (code that looks alike and needs no
    change). The example runs under ``--target target`` (``Example(..., target="cpu")``), with
    ``facts``: the facts about the project it stands in that its finding needs (fields of
    :class:`Options`, such as ``cuda_setups``).
    """

    before: str
    after: str | None = None
    unsafe_fixes: bool = True
    finds: bool = True
    target: Target = Target.NEURON
    facts: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "target", Target(self.target))
        if not self.finds and self.after is not None:
            raise TypeError("an Example that finds nothing cannot have an `after`")

    def options(self, **changes: Any) -> Options:
        """The options the example runs with (``changes`` on top)."""
        return Options(**{"target": self.target, "unsafe_fixes": self.unsafe_fixes, **dict(self.facts), **changes})


Replacement = cst.CSTNode | cst.RemovalSentinel | cst.FlattenSentinel


@dataclass(eq=False)
class Report:
    """What a rule said about one node during the walk; the engine turns it into a Finding."""

    rule: type[Transform]
    node: cst.CSTNode
    message: str
    safety: Safety
    evidence: Evidence
    replacement: Replacement | None = None
    #: ids of the nodes enclosing ``node`` when it was reported, to spot overlapping fixes
    ancestor_ids: frozenset[int] = field(default_factory=frozenset)
    imports: tuple[ImportRequest, ...] = ()
    #: an edit group: the engine applies the fixes of one group in a file together or not at all
    group: str | None = None
    #: why a fix became a report, or what the decision stage did to it: ``(kind, text)`` pairs
    #: (:data:`neuronize.types.Note`)
    notes: tuple[Note, ...] = ()
    #: ``hard`` / ``optional`` for an import of a CUDA-only package
    dependency: str | None = None
    #: why the role of the code makes CUDA its point (:mod:`neuronize.analysis.roles`), if it does
    role: str | None = None
    #: the other devices a dispatch around the node serves (:meth:`FileContext.device_dispatch`)
    dispatch: tuple[str, ...] = ()
    #: the ``if`` / conditional expression whose test must be edited too for this edit to mean
    #: anything (an edit on the CUDA side of a guard a rule widens): policy step 9
    guard: cst.CSTNode | None = None
    #: a report on code that runs unchanged on every host, Neuron included (a CUDA setting kept
    #: because the code reads its value back): it holds back no guard around it (policy step 8)
    harmless: bool = False
    #: the name of the edit group this report holds: it keeps a placement on CUDA that no edit
    #: moves (a model placed on GPUs by its loader, a legacy CUDA tensor type), so the device
    #: edits of its function, or of its file where it is at module level, wait for it (policy step 7)
    pins: str | None = None

    def without_fix(self, **changes: object) -> Report:
        """This report with no fix (and ``changes``): what the decision stage holds back."""
        return dataclasses.replace(self, replacement=None, **changes)  # type: ignore[arg-type]

    @property
    def subject(self) -> str | None:
        """The code the message opens with (:func:`neuronize.types.subject_of`)."""
        return subject_of(self.message)

    @property
    def fixable(self) -> bool:
        return self.replacement is not None


class Reporter:
    """Collects what the rules of one file's walk report, in the order they report it (the
    first fix reported for a node wins). The engine owns one per walk; rules reach it only
    through :meth:`Transform.fix`, :meth:`Transform.remove` and :meth:`Transform.report`."""

    def __init__(self) -> None:
        self.reports: list[Report] = []

    def add(self, rule: type[Transform], node: cst.CSTNode, stack: list[cst.CSTNode], message: str,
            safety: Safety, evidence: Evidence, replacement: Replacement | None,
            imports: tuple[ImportRequest, ...] = (), group: str | None = None, dependency: str | None = None,
            role: str | None = None, dispatch: tuple[str, ...] = (), guard: cst.CSTNode | None = None,
            harmless: bool = False, pins: str | None = None) -> None:
        """Record a report on ``node``; ``stack`` is the walk's path down to it (inclusive)."""
        ancestors = frozenset(id(n) for n in stack if n is not node)
        self.reports.append(Report(rule, node, message, safety, evidence, replacement, ancestors, imports, group,
                                   dependency=dependency, role=role, dispatch=dispatch, guard=guard,
                                   harmless=harmless, pins=pins))


class Transform:
    """Base class of every rule. See the module docstring and ``transforms/`` for examples.

    Class attributes every rule sets:

    - ``id``: ``NRN`` and three digits (1xx device and ``torch.cuda`` runtime, 2xx mixed precision,
      3xx compile, static shapes and CUDA-only flags, 4xx distributed, 5xx Hugging Face,
      6xx requirements, launchers, containers and configs, 9xx cannot migrate);
    - ``name``: kebab-case name of the pattern found;
    - ``safety``: the class of its fixes (a finding may override it);
    - ``evidence``: the strongest mark the rule rests on (a finding may override it);
    - ``tokens``: byte strings, at least one of which is in every file the rule can fire on
      (the pre-filter skips files with none of any enabled rule's tokens);
    - ``examples``: :class:`Example` pairs, run by the test suite;
    - ``section``: the section of the migration report its leftover findings go in (``SECTIONS``);
    - ``effort``: the work a report-only finding still needs by hand (``EFFORTS``; default medium);
    - ``references``: public documentation URLs, printed by ``neuronize explain``;
    - ``catch_all``: True for a report-only rule whose findings give way to every other rule's on
      the same code (:mod:`neuronize.decision.claims`);
    - ``stops_without_cuda``: True for a rule whose findings are on code that raises without CUDA;
    - ``needs``: the first release of torch (or transformers) with the API its fixes write.
    """

    id: ClassVar[str]
    name: ClassVar[str]
    safety: ClassVar[Safety]
    evidence: ClassVar[Evidence]
    tokens: ClassVar[tuple[bytes, ...]]
    examples: ClassVar[tuple[Example, ...]] = ()
    section: ClassVar[str]
    effort: ClassVar[str] = "medium"
    references: ClassVar[tuple[str, ...]]
    #: the ``--target`` values whose fixes this rule writes itself (transforms/_helpers/per_target.py); under
    #: any other target its fixes are reported, not applied (their code would be Neuron-only)
    targets: ClassVar[tuple[Target, ...]] = (Target.NEURON,)
    catch_all: ClassVar[bool] = False
    #: every finding of the rule is on code that raises where CUDA is absent (an NVIDIA tool run
    #: from Python): the device edits of the code around it wait for it (the decision stage)
    stops_without_cuda: ClassVar[bool] = False
    #: the first release (major, minor) of each package with the API the rule's fixes write
    #: (``(("torch", (1, 10)),)`` for ``torch.autocast``); in a project whose requirement of it stops
    #: below that, the fixes are reported, not applied
    needs: ClassVar[tuple[tuple[str, tuple[int, int]], ...]] = ()
    #: the kinds of source the rule reads (neuronize/sources/kinds.py); Python rules read Python
    #: files and notebook cells, line rules (neuronize/line_rule.py) name theirs
    kinds: ClassVar[tuple[SourceKind, ...]] = CODE_KINDS

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__name__.startswith("_") or cls.__dict__.get("abstract", False):
            return
        _validate_rule(cls)

    #: where fix/remove/report go: the engine's collector for this walk (see :meth:`for_file`)
    _reporter: Reporter

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx

    @classmethod
    def for_file(cls, ctx: FileContext, reporter: Reporter) -> Transform:
        """An instance for one file's walk, reporting to the engine's ``reporter``. Bound after
        construction, so rules that define ``__init__(self, ctx)`` need not pass it on."""
        rule = cls(ctx)
        rule._reporter = reporter
        return rule

    # -- what a rule calls -------------------------------------------------------------------
    def fix(
        self,
        node: cst.CSTNode,
        replacement: Replacement,
        message: str,
        *,
        safety: Safety | None = None,
        evidence: Evidence | None = None,
        imports: tuple[ImportRequest, ...] = (),
        group: str | None = None,
        guard: cst.CSTNode | None = None,
        pins: str | None = None,
    ) -> None:
        """Report ``node`` and propose ``replacement`` for it (a node, or a libcst sentinel).

        ``imports`` are added (or removed) only if this fix is applied. Fixes that name the same
        ``group`` in a file are applied together or not at all, at the weakest safety among them.
        ``guard``: the ``if`` or conditional expression whose test another edit must change for this
        one to be made (the CUDA side of a guard that takes Neuron in: policy step 9).
        ``pins``: until this fix is made, the code keeps a placement on CUDA (an assert that CUDA is
        available); the name of the edit group it forms with the device edits of its function (of
        its file, at module level), which are made with it.
        Whether it is applied is decided later, by :mod:`neuronize.decision.policy`: the report records the
        role of the code (:mod:`neuronize.analysis.roles`) and the device dispatch around it for that.
        """
        safety = safety or self.safety
        evidence = evidence or self.evidence
        if safety is Safety.REPORT_ONLY:
            raise ValueError(f"{self.id}: a report-only finding cannot carry a fix")
        if isinstance(replacement, cst.CSTNode):
            from neuronize.writing.quotes import requote

            replacement = requote(node, replacement, self.ctx.quote_style)
        stack = self.ctx.stack_for(node)
        role = self.ctx.role(stack)
        self._reporter.add(type(self), node, stack, message, safety, evidence, replacement, imports,
                           group, role=role.message if role is not None else None,
                           dispatch=self.ctx.device_dispatch(), guard=guard, pins=pins)

    def remove(
        self,
        statement: cst.CSTNode,
        message: str,
        *,
        safety: Safety | None = None,
        evidence: Evidence | None = None,
        imports: tuple[ImportRequest, ...] = (),
        group: str | None = None,
    ) -> None:
        """Delete a statement, keeping its comments and the enclosing block valid (``pass``).

        ``statement`` is a small statement (``Expr``, ``Assign``...) or a whole statement.
        """
        self.fix(self.ctx.statement_to_remove(statement), cst.RemoveFromParent(), message,
                 safety=safety, evidence=evidence, imports=imports, group=group)

    def report(
        self,
        node: cst.CSTNode,
        message: str,
        *,
        evidence: Evidence | None = None,
        safety: Safety = Safety.REPORT_ONLY,
        group: str | None = None,
        dependency: str | None = None,
        harmless: bool = False,
        pins: str | None = None,
    ) -> None:
        """Report ``node`` without a fix (``safety`` may say what a manual fix would risk). In a
        ``group``, it holds back the group's fixes: they only make sense with this one done.
        ``dependency``: ``hard`` / ``optional`` for an import of a CUDA-only package. ``harmless``:
        the code runs unchanged on every host, Neuron included. ``pins``: the code keeps a
        placement on CUDA that no edit moves; the name of the edit group it forms with the device
        edits of its function (of its file, at module level), which wait for it."""
        self._reporter.add(type(self), node, self.ctx.stack_for(node), message, safety,
                           evidence or self.evidence, None, group=group, dependency=dependency, harmless=harmless,
                           pins=pins)

    # -- documentation -------------------------------------------------------------------------
    @classmethod
    def documentation(cls) -> str:
        return inspect.cleandoc(cls.__doc__ or "")

    @classmethod
    def summary(cls) -> str:
        """The first line of the docstring: one sentence saying what the rule finds."""
        return cls.documentation().splitlines()[0].strip()


#: A label of the project's internal reference file ("reference D8", "§3.1", "D8 ("): never shown
#: to users. One regex over every docstring cost ~20 ms of each start (a character class tried at
#: every position): the literal parts are found with str.find first.
_REFERENCE_WORDS = re.compile(r"\breference [A-Z]{1,2}\d|§\d")
_LABEL_BEFORE_PAREN = re.compile(r"(?<!\w)[A-Z]\d{1,2}\Z")


def _cites_reference_label(doc: str) -> bool:
    if ("reference " in doc or "§" in doc) and _REFERENCE_WORDS.search(doc):
        return True
    at = doc.find(" (")
    while at != -1:
        if _LABEL_BEFORE_PAREN.search(doc, max(0, at - 4), at):
            return True
        at = doc.find(" (", at + 2)
    return False


def _validate_rule(cls: type[Transform]) -> None:
    where = f"{cls.__module__}.{cls.__qualname__}"
    for attr in ("id", "name", "safety", "evidence", "tokens", "section", "references"):
        if attr not in cls.__dict__ and not hasattr(cls, attr):
            raise TypeError(f"{where}: a rule must set {attr!r}")
    if not RULE_ID.match(cls.id):
        raise TypeError(f"{where}: id {cls.id!r} must look like NRN123")
    if not RULE_NAME.match(cls.name):
        raise TypeError(f"{where}: name {cls.name!r} must be kebab-case")
    if not isinstance(cls.safety, Safety) or not isinstance(cls.evidence, Evidence):
        raise TypeError(f"{where}: safety and evidence must be Safety / Evidence members")
    if cls.evidence.weak and cls.safety is Safety.SAFE:
        raise TypeError(f"{where}: a rule resting on {cls.evidence} evidence cannot be safe")
    if not cls.tokens or not all(isinstance(t, bytes) and t for t in cls.tokens):
        raise TypeError(f"{where}: tokens must be a non-empty tuple of bytes")
    doc = cls.__doc__ or ""
    missing = [h for h in DOC_HEADINGS if f"{h}:" not in doc and f"{h}\n" not in doc]
    if missing:
        raise TypeError(f"{where}: docstring lacks the heading(s) {', '.join(missing)}")
    if not cls.examples:
        raise TypeError(f"{where}: a rule needs at least one Example")
    if cls.safety is Safety.REPORT_ONLY and any(e.after not in (None, e.before) for e in cls.examples):
        raise TypeError(f"{where}: a report-only rule's examples cannot change the code")
    if cls.catch_all and cls.safety is not Safety.REPORT_ONLY:
        raise TypeError(f"{where}: a catch-all rule must be report-only")
    if cls.section not in SECTIONS:
        raise TypeError(f"{where}: section {cls.section!r} must be one of {', '.join(SECTIONS)}")
    if cls.effort not in EFFORTS:
        raise TypeError(f"{where}: effort {cls.effort!r} must be one of {', '.join(EFFORTS)}")
    if not isinstance(cls.references, tuple) or not cls.references or not all(
            isinstance(u, str) and u.startswith("https://") and " " not in u for u in cls.references):
        raise TypeError(f"{where}: references must be a non-empty tuple of https:// URLs")
    if _cites_reference_label(doc):
        raise TypeError(f"{where}: the docstring cites a label of the internal reference file; "
                        "cite the public documentation (references) instead")
