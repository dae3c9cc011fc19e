"""Rules for the line-based kinds (requirements, pyproject, shell, Dockerfile, YAML/JSON configs).

A :class:`LineRule` is a :class:`~neuronize.transform.Transform` in every respect users see (id,
name, safety, evidence, docstring, examples, section, references, ``--select``), but it reads a
:class:`TextDocument` (lines of one file) instead of a libcst tree, and proposes span edits
instead of nodes. Its ``kinds`` say which files it reads. It never touches files or prints.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from neuronize.sources.kinds import SourceKind
from neuronize.sources.lines import Edit, Line, code_part, newline_of
from neuronize.transform import Evidence, Safety, Transform
from neuronize.types import Note, Options


@dataclass(frozen=True)
class TextDocument:
    """One file of a line-based kind, as the rules read it."""

    kind: SourceKind
    lines: Sequence[Line]
    path: str = "<string>"

    @property
    def newline(self) -> str:
        return newline_of(self.lines)

    def code(self, index: int) -> str:
        """Line ``index`` without its comment (JSON has none)."""
        text = self.lines[index].text
        return text if self.kind is SourceKind.JSON_CONFIG else code_part(text)


@dataclass(frozen=True)
class Span:
    """Where a finding is: ``line`` 0-based, ``start``/``end`` offsets in that line's text."""

    line: int
    start: int
    end: int


@dataclass(frozen=True)
class LineReport:
    rule: type[LineRule]
    span: Span
    message: str
    safety: Safety
    evidence: Evidence
    edits: tuple[Edit, ...] | None = None
    group: str | None = None
    #: what the decision stage did: ``(kind, text)`` pairs (:data:`neuronize.types.Note`)
    notes: tuple[Note, ...] = ()

    @property
    def fixable(self) -> bool:
        return self.edits is not None

    def without_fix(self, **changes: object) -> LineReport:
        """This report with no fix (and ``changes``): what the decision stage holds back."""
        return dataclasses.replace(self, edits=None, **changes)  # type: ignore[arg-type]


@dataclass
class KindContext:
    """What a line rule knows besides the document: the run's options and where reports go."""

    options: Options
    reports: list[LineReport] = field(default_factory=list)


class LineRule(Transform):
    """Base class of the rules that read line-based kinds (see the module docstring)."""

    abstract = True
    kinds: ClassVar[tuple[SourceKind, ...]] = ()

    def __init__(self, ctx: KindContext) -> None:
        self.kctx = ctx

    def check(self, doc: TextDocument) -> None:
        """Look at ``doc`` and call :meth:`propose` / :meth:`flag`."""
        raise NotImplementedError

    def propose(self, span: Span, edits: Sequence[Edit], message: str, *, safety: Safety | None = None,
                evidence: Evidence | None = None, group: str | None = None) -> None:
        """Report ``span`` with ``edits`` as its fix; :mod:`neuronize.decision.policy` decides whether it is
        applied (as for Python rules)."""
        safety = safety or self.safety
        evidence = evidence or self.evidence
        self.kctx.reports.append(LineReport(type(self), span, message, safety, evidence, tuple(edits), group))

    def flag(self, span: Span, message: str, *, evidence: Evidence | None = None,
             safety: Safety = Safety.REPORT_ONLY, group: str | None = None) -> None:
        """Report ``span`` without a fix."""
        self.kctx.reports.append(LineReport(type(self), span, message, safety, evidence or self.evidence,
                                            None, group))
