"""Why a file could not be read: the exception its reading raised, as an error for that one file."""

from __future__ import annotations

import libcst as cst

from neuronize.analysis.syntax_error import python_syntax_error
from neuronize.types import FileError


def read_error(exc: BaseException, source: bytes) -> FileError:
    if isinstance(exc, cst.ParserSyntaxError):
        # CPython's message and position: what the user's editor and interpreter say
        described = python_syntax_error(source)
        if described is not None:
            return described
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else "invalid syntax"
        return FileError(f"libcst cannot parse this file, though Python can: {first}", exc.raw_line,
                         exc.raw_column + 1)
    if isinstance(exc, UnicodeDecodeError):
        line = source[: exc.start].count(b"\n") + 1
        return FileError(f"cannot decode: {exc.reason} (byte 0x{source[exc.start]:02x})", line)
    if isinstance(exc, SyntaxError):
        # The encoding cookie names an unknown codec, or the bytes do not decode: find where.
        if exc.lineno is None:
            try:
                source.decode("utf-8")
            except UnicodeDecodeError as bad:
                line = source[: bad.start].count(b"\n") + 1
                return FileError(
                    f"cannot decode as UTF-8 (byte 0x{source[bad.start]:02x}) and no encoding "
                    "declaration says otherwise", line)
        return FileError(f"cannot read: {exc.msg}", exc.lineno)
    if type(exc) is LookupError:  # an encoding declaration naming no codec (IndexError, KeyError: ours)
        return FileError(f"cannot decode: {exc}", 1)
    if isinstance(exc, RecursionError):
        return FileError("too deeply nested for the parser (RecursionError); left alone")
    return FileError(f"internal error ({type(exc).__name__}: {exc}); please report it")
