"""Whether code still runs on Python 2 too, where Python 3 syntax (a return annotation) does
not parse.

A module asks ``__future__`` for Python 3's behaviour (``from __future__ import print_function``)
only to keep running on Python 2. One such module says it of the whole project: its other
modules, with no ``__future__`` line of their own, run under the same interpreter. So does a
module written in Python 2's own syntax (``print "..."``, ``except Error, e:``), and a notebook
whose kernel is Python 2's.
"""

from __future__ import annotations

import re

#: a ``from __future__ import`` of a feature only Python 2 needs (``annotations`` is Python 3's);
#: ``__future__`` imports may only open a module, so the line starts at the margin
_PYTHON2_FUTURE = re.compile(
    rb"^from[ \t]+__future__[ \t]+import[ \t]+(?:\([^)]*|[^\n]*)"
    rb"\b(?:absolute_import|division|print_function|unicode_literals|with_statement)\b", re.MULTILINE)
#: statements only Python 2 parses: ``print`` of a string with no parentheses, ``except Error, e:``
_PYTHON2_STATEMENT = re.compile(
    rb"^[ \t]*(?:print[ \t]+[\"']|except[ \t]+[\w.]+[ \t]*,[ \t]*\w+[ \t]*:)", re.MULTILINE)
#: a notebook's kernel: Jupyter names Python 2's ``python2`` (the language version a notebook records
#: says less: Colab's template records 2.7 under a Python 3 kernel)
_PYTHON2_NOTEBOOK = re.compile(rb'"kernelspec"[ \t\r\n]*:[ \t\r\n]*\{[^{}]*"name"[ \t\r\n]*:[ \t\r\n]*"python2"')


def keeps_python2(source: bytes) -> bool:
    """``source`` asks ``__future__`` for a feature only Python 2 lacks, or is written in
    Python 2's syntax."""
    return (b"__future__" in source and _PYTHON2_FUTURE.search(source) is not None) or (
        (b"print" in source or b"except" in source) and _PYTHON2_STATEMENT.search(source) is not None)


def notebook_keeps_python2(raw: bytes) -> bool:
    """The notebook ``raw`` (its JSON) runs on a Python 2 kernel."""
    return b"python2" in raw and _PYTHON2_NOTEBOOK.search(raw) is not None
