"""Whether code still runs on Python 2 too, where Python 3 syntax (a return annotation) does
not parse.

A module asks ``__future__`` for Python 3's behaviour (``from __future__ import print_function``)
only to keep running on Python 2. One such module says it of the whole project: its other
modules, with no ``__future__`` line of their own, run under the same interpreter.
"""

from __future__ import annotations

import re

#: a ``from __future__ import`` of a feature only Python 2 needs (``annotations`` is Python 3's);
#: ``__future__`` imports may only open a module, so the line starts at the margin
_PYTHON2_FUTURE = re.compile(
    rb"^from[ \t]+__future__[ \t]+import[ \t]+(?:\([^)]*|[^\n]*)"
    rb"\b(?:absolute_import|division|print_function|unicode_literals|with_statement)\b", re.MULTILINE)


def keeps_python2(source: bytes) -> bool:
    """``source`` asks ``__future__`` for a feature only Python 2 lacks."""
    return b"__future__" in source and _PYTHON2_FUTURE.search(source) is not None
