"""Inline suppressions: ``# neuronize: ignore``, ``# neuronize: ignore[NRN101, cuda-method]`` and
ruff's spelling ``# noqa: NRN101``.

A suppression covers its own line and, when the comment stands alone on its line, the next line,
so a reviewed call can be marked either at its end or just above it (which is the only place a
comment fits on a multi-line call without reformatting it). Comments are found with
:mod:`tokenize`, so the same text inside a string never counts. A malformed directive
(``ignore[`` without ``]``, or ``ignore[]``) suppresses nothing: a typo must never turn into
"ignore every rule".

``# noqa: NRN102, E501`` is honoured for the ``NRN`` codes it names (other tools' codes are theirs),
on its own line only, as ruff and flake8 read it. A bare ``# noqa`` is not: it was written to quiet
another linter, and honouring it would hide CUDA code nobody reviewed for the migration.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Literal

from neuronize.types import Finding

_DIRECTIVE = re.compile(
    r"#\s*neuronize:\s*ignore(?![\w-])(?:\s*\[(?P<codes>[^\]#]*)(?P<close>\])?)?"
)
_NOQA = re.compile(r"#\s*noqa\s*:\s*(?P<codes>[A-Za-z]+[0-9]+(?:[\s,]+[A-Za-z]+[0-9]+)*)",
                   re.IGNORECASE)
_OUR_CODE = re.compile(r"(?i)NRN[0-9]+")
_DIGIT_LIKE = str.maketrans("OIL", "011")
_SKIP = frozenset({tokenize.ENCODING, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                   tokenize.DEDENT, tokenize.COMMENT})


@dataclass(frozen=True)
class Suppression:
    """One ``# neuronize: ignore`` comment. ``codes`` is ``None`` for "every rule"."""

    line: int
    codes: frozenset[str] | None
    applies_to: frozenset[int]
    column: int = field(default=1, compare=False)  # where the comment starts, 1-based

    def matches(self, finding: Finding) -> bool:
        """Whether this names the finding's rule (ids in any case, names as ``rule_by_code``)."""
        if self.codes is None:
            return True
        return any(code.upper() == finding.rule or code == finding.name for code in self.codes)


def parse_suppressions(source: bytes) -> list[Suppression]:
    """Every suppression comment in ``source``, in line order.

    Source that cannot be tokenized (a bad encoding, an unclosed bracket) yields the
    suppressions found before the point of failure; those after it are not seen.
    """
    if b"neuronize:" not in source and b"noqa" not in source.lower():
        return []
    return suppressions_in(_comments(source))


def suppressions_in(comments: Iterable[tuple[int, int, str, bool]]) -> list[Suppression]:
    """The suppressions among ``(line, column, comment text, alone on its line)`` comments: the one
    syntax for every kind of source, whoever finds its comments."""
    found: list[Suppression] = []
    for line, column, comment, alone in comments:
        codes = _codes(comment)
        if codes is not False:
            covers = {line, line + 1} if alone else {line}
            found.append(Suppression(line, codes, frozenset(covers), column))
        elif _noqa_codes(comment):
            found.append(Suppression(line, _noqa_codes(comment), frozenset({line}), column))
    return found


def _noqa_codes(comment: str) -> frozenset[str]:
    """The ``NRN`` codes a ``# noqa: ...`` comment names (empty: none of ours, or no noqa)."""
    return frozenset(code.upper() for match in _NOQA.finditer(comment)
                     for code in re.split(r"[\s,]+", match.group("codes"))
                     if _OUR_CODE.fullmatch(code))


def unknown_codes(suppression: Suppression, ids: frozenset[str], names: frozenset[str]
                  ) -> list[tuple[str, str | None]]:
    """The codes of ``suppression`` that name no rule (a typo silences nothing), each with the
    closest known id or name, if one is close."""
    import difflib

    unknown = []
    for code in sorted(suppression.codes or ()):
        if code.upper() in ids or code in names:
            continue
        if code[:3].upper() == "NRN":
            # letters typed for look-alike digits (NRN1O2) first
            close = difflib.get_close_matches(code.upper().translate(_DIGIT_LIKE), sorted(ids), n=1)
        else:
            close = difflib.get_close_matches(code, sorted(names), n=1)
        unknown.append((code, close[0] if close else None))
    return unknown


def _comments(source: bytes) -> Iterator[tuple[int, int, str, bool]]:
    """``(line, column, comment text, alone on its line)`` for each comment that may be a
    suppression."""
    last_code_row = 0
    try:  # tokenize() reads the encoding eagerly, so it too belongs inside the try
        for tok in tokenize.tokenize(io.BytesIO(source).readline):
            if tok.type == tokenize.COMMENT:
                if "neuronize:" in tok.string or "noqa" in tok.string.lower():
                    yield tok.start[0], tok.start[1] + 1, tok.string, last_code_row < tok.start[0]
            elif tok.type not in _SKIP:
                last_code_row = tok.end[0]
    except (tokenize.TokenError, SyntaxError, UnicodeDecodeError, LookupError, ValueError):
        return


def _codes(comment: str) -> frozenset[str] | None | Literal[False]:
    """The codes a comment names, ``None`` for all rules, ``False`` when it is no suppression.

    Several directives in one comment are merged; a bare one wins.
    """
    codes: set[str] = set()
    seen = False
    for match in _DIRECTIVE.finditer(comment):
        if match.group("codes") is None:
            return None
        names = [c for c in re.split(r"[\s,]+", match.group("codes")) if c]
        if match.group("close") is None or not names:
            continue  # malformed: suppress nothing rather than everything
        seen = True
        codes.update(names)
    return frozenset(codes) if seen else False
