"""Repeated findings, told once: the same report-only finding (same rule, same text but for the
code that names the place, its ``subject``) at several places is one line with a count in the text and
Markdown outputs. JSON, SARIF and GitHub annotations keep every location."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

from neuronize.types import Finding

T = TypeVar("T")

#: how many of the other places a collapsed line names
SHOWN = 3


def repeat_key(finding: Finding) -> tuple[str, str] | None:
    """Findings with one key say the same thing; None for a fix (each edit is its own decision)."""
    if finding.fixable or finding.applied:
        return None
    text = finding.text
    if finding.subject is not None:
        text = text[len(finding.subject) + 2:].lstrip()  # the message opens with `subject`
    return finding.rule, text


def collapse(items: Sequence[tuple[T, Finding]],
             key_of: Callable[[T, Finding], Hashable | None] = lambda _, finding: repeat_key(finding),
             ) -> list[tuple[T, Finding, list[tuple[T, Finding]]]]:
    """Each finding that is the first of its key (``key_of``, default :func:`repeat_key`), with
    the later ones (in the given order)."""
    firsts: dict[Hashable, list[tuple[T, Finding]]] = {}
    out: list[tuple[T, Finding, list[tuple[T, Finding]]]] = []
    for owner, finding in items:
        key = key_of(owner, finding)
        if key is not None and key in firsts:
            firsts[key].append((owner, finding))
            continue
        repeats: list[tuple[T, Finding]] = []
        if key is not None:
            firsts[key] = repeats
        out.append((owner, finding, repeats))
    return out


def more(places: Sequence[str], limit: int | None = SHOWN, like: str = "like it") -> str:
    """`` (and 4 more like it: a.py:3:1, b.py:9:1, c.py:2:5, ...)``, or nothing; ``limit=None``
    names every place; ``like`` says how the others are like the one shown."""
    if not places:
        return ""
    cut = len(places) if limit is None else limit
    shown = ", ".join(places[:cut]) + (", ..." if len(places) > cut else "")
    return f" (and {len(places)} more {like}: {shown})"
