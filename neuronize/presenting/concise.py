"""The concise format's line: rule, what, where, in about :data:`WIDTH` characters.

A finding's message says what the fix does (or what is left), then why, the evidence and the
alternatives. The concise line keeps the what (:func:`headline`); the rest is in the ``full``
format, the ``--diff`` comments and ``neuronize explain``. A site whose safe fix has an unsafe
variant (the same rule at the same place) is one line that says what ``--unsafe-fixes`` adds
(:func:`fold_variants`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import TypeVar

from neuronize.types import Finding, Safety

T = TypeVar("T")

#: the length a concise line aims at (a long path, or the places of a repeat, can go beyond it)
WIDTH = 124
#: what a headline keeps however long the place in front of it is
MIN_WIDTH = 72
_KEPT_ASIDE = "(did you mean "
_EVIDENCE = re.compile(r"\s*\[evidence: [^\]]*\]\s*$")


def _top_level(text: str) -> Iterator[int]:
    """The positions of ``text`` outside `code` and outside parentheses or brackets."""
    code = False
    depth = 0
    for i, char in enumerate(text):
        if char == "`":
            code = not code
        elif not code and char in "([":
            depth += 1
        elif not code and char in ")]":
            depth = max(0, depth - 1)
        elif not code and depth == 0:
            yield i


def _without_asides(text: str) -> str:
    """``text`` without its top-level asides in parentheses or brackets (and the space before
    each)."""
    out: list[str] = []
    depth = 0
    code = False
    for i, char in enumerate(text):
        if char == "`":
            code = not code
        elif not code and depth == 0 and text.startswith(_KEPT_ASIDE, i):
            out.append(char)  # a suggestion is what the finding says, not a reason
            depth = -1
            continue
        elif not code and char == ")" and depth == -1:
            depth = 0
        elif not code and char in "([" and depth >= 0:
            if depth == 0:
                while out and out[-1] == " ":
                    out.pop()
            depth += 1
            continue
        elif not code and char in ")]" and depth > 0:
            depth -= 1
            continue
        if depth <= 0:
            out.append(char)
    return "".join(out)


def _cut(text: str, separator: str) -> str:
    for i in _top_level(text):
        if text.startswith(separator, i) and "`" in text[:i]:
            return text[:i]
    return text


def headline(message: str, width: int = WIDTH) -> str:
    """What ``message`` says the fix does or what is left, without its reasons: up to its first
    ``; ``, then, while longer than ``width``, without its asides, up to its first ``: `` after a
    `code` part, cut at a word (never inside `code`) with ``…``."""
    text = _EVIDENCE.sub("", " ".join(message.split()))
    text = re.sub(r"(\s*\[[^\]`]*(`[^`]*`[^\]`]*)*\])+$", "", text)  # [edit group ...] and the like
    for i in _top_level(text):
        if text.startswith("; ", i):
            text = text[:i]
            break
    if len(text) > width:
        text = _without_asides(text)
    if len(text) > width:
        text = _cut(text, ": ")
    if len(text) > width:
        spaces = [i for i in _top_level(text) if text[i] == " " and i < width - 1]
        cut = spaces[-1] if spaces and spaces[-1] > width // 3 else width - 1
        text = re.sub(r"\s*(->|[,;:])$", "", text[:cut].rstrip()) + "…"
        text += "`" if text.count("`") % 2 else ""  # a `code` part cut short stays closed
    return text


#: what a concise line says of a fix the decision held back, by the kind of note that says why
_HELD = {"group": "its edit group waits", "guard": "its guarded code stays", "dispatch": "a branch of a dispatch",
         "import-safety": "it would run at import", "requirement": "the project's requirement is older"}
_HELD_WIDTH = 44
_CLAUSE_END = re.compile(r"\s\(|[;,:](?=\s)")


def held(finding: Finding) -> str:
    """`` (not applied: its edit group waits)`` for a finding whose fix a decision held back, in
    a few words (the ``full`` format says the whole why); ``""`` for any other finding."""
    if finding.fixable:
        return ""
    for kind, text in (*finding.notes, ("", finding.message)):
        at = text.find("not applied")
        if at < 0:
            continue
        why = _HELD.get(kind)
        if why is None:  # a role, the rule's own words: their first clause (`this file is test code`)
            rest = text[at + len("not applied"):].lstrip(":, ")
            end = next((m.start() for m in _CLAUSE_END.finditer(rest) if rest.count("`", 0, m.start()) % 2 == 0),
                       len(rest))  # the first clause's end outside `code`
            why = rest[:end]
        if len(why) > _HELD_WIDTH:
            cut = why.rfind(" ", 0, _HELD_WIDTH)
            if why.count("`", 0, cut) % 2:  # not inside `code`: before it
                cut = why.rfind("`", 0, cut)
            why = why[:cut].rstrip() + "…"
        return f" (not applied: {why})"
    return ""


def fold_variants(items: Sequence[tuple[T, Finding]]) -> tuple[list[tuple[T, Finding]], dict[int, str]]:
    """The findings with each unsafe variant of a safe fix (same file, place and rule) left out,
    and, by ``id`` of the safe finding kept, the headline of its unsafe variant."""
    safe = {(id(owner), x.line, x.column, x.rule): x for owner, x in items
            if x.fixable and x.safety is Safety.SAFE}
    kept: list[tuple[T, Finding]] = []
    variant: dict[int, str] = {}
    for owner, x in items:
        twin = safe.get((id(owner), x.line, x.column, x.rule))
        if x.safety is Safety.UNSAFE and x.fixable and twin is not None and id(twin) not in variant:
            variant[id(twin)] = x.message
            continue
        kept.append((owner, x))
    return kept, variant


def adds(safe: str, unsafe: str) -> str:
    """What the unsafe variant adds to the safe fix, by the first `code` part its headline adds:
    `` (--unsafe-fixes: + `dtype=torch.bfloat16`)``."""
    base, more = headline(safe, 10_000), headline(unsafe, 10_000)
    extra = more[len(base):] if more.startswith(base) else more
    code = re.search(r"`[^`]+`", extra)
    return f" (--unsafe-fixes: + {code.group(0)})" if code else " (more with --unsafe-fixes)"
