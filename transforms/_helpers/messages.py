"""Messages: how a finding quotes code, and the message templates the rules fill in."""

from __future__ import annotations

import libcst as cst

_EMPTY = cst.Module(body=[])


def short(node: cst.CSTNode, limit: int | None = 90, *, tight: bool = False) -> str:
    """The source of ``node`` on one line, cut to ``limit`` characters (None: whole) for a message.

    ``tight`` also closes the gaps a multi-line call leaves inside its parentheses (``f( a )``).
    """
    text = " ".join(_EMPTY.code_for_node(node).split())
    if tight:
        text = text.replace("( ", "(").replace(" )", ")")
    return text if limit is None or len(text) <= limit else text[: limit - 3] + "..."
