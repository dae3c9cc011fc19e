"""A file that does not parse, described as CPython describes it: its own message and position,
and a hint when the file looks like Python 2 (neuronize, like Python 3, cannot read that).

The text is only compiled to an AST (``ast.PyCF_ONLY_AST``): nothing of it is ever run.
"""

from __future__ import annotations

import ast
import re
import warnings

from neuronize.types import FileError

#: CPython's own messages for Python 2 syntax, and what each one is
_PY2_MESSAGES = (
    ("Missing parentheses in call to 'print'", "a print statement"),
    ("Missing parentheses in call to 'exec'", "an exec statement"),
    ("multiple exception types must be parenthesized", "`except X, e:`"),
    ("leading zeros in decimal integer literals", "an octal literal like `0777`"),
)
#: Python 2 syntax CPython reports as plain "invalid syntax", by the text of the line
_PY2_LINES = (
    (re.compile(r"`[^`\n]*`"), "backticks (repr)"),
    (re.compile(r"^\s*print\s*>>"), "`print >>file`"),
    (re.compile(r"^\s*print\s+[\"'\w]"), "a print statement"),
    (re.compile(r"^\s*except\s+[\w.]+\s*,\s*\w+\s*:"), "`except X, e:`"),
    (re.compile(r"^\s*raise\s+[\w.]+\s*,"), "`raise E, value`"),
    (re.compile(r"^\s*exec\s+[\"'\w]"), "an exec statement"),
    (re.compile(r"<>"), "the `<>` operator"),
    (re.compile(r"\b\d+[lL]\b"), "a long literal like `10L`"),
    (re.compile(r"\bur[\"']", re.IGNORECASE), "a `ur''` string"),
)


def python_syntax_error(source: bytes, path: str = "<file>") -> FileError | None:
    """CPython's syntax error for ``source`` (``None`` if CPython compiles it): ``syntax error:
    MESSAGE`` at CPython's line and column, plus a Python 2 hint where one applies."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences and the like
            compile(source, path, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        line = exc.lineno
        column = exc.offset if exc.offset and exc.offset > 0 else None
        hint = _python2_hint(exc.msg, exc.text or _line(source, line))
        return FileError(f"syntax error: {exc.msg}{hint}", line, column)
    except (ValueError, UnicodeDecodeError):  # NUL bytes, undecodable text: reported elsewhere
        return None
    return None


def _python2_hint(message: str, line_text: str) -> str:
    why = next((what for text, what in _PY2_MESSAGES if message.startswith(text)), None)
    if why is None and message.startswith("invalid"):
        why = next((what for pattern, what in _PY2_LINES if pattern.search(line_text)), None)
    if why is None:
        return ""
    return (f" (this looks like Python 2: {why}; neuronize reads Python 3 code, as TorchNeuron "
            "runs it: port the file to Python 3 first)")


def _line(source: bytes, line: int | None) -> str:
    if not line:
        return ""
    lines = source.splitlines()
    return lines[line - 1].decode("utf-8", "replace") if 0 < line <= len(lines) else ""
