"""The baseline ("ratchet"): accept today's findings, fail only on new ones.

A large codebase cannot migrate in one go; a baseline records what is already there so CI can
still refuse new CUDA-only code. An entry is keyed by rule, path and a fingerprint of the
finding's source line (whitespace normalised) plus its occurrence index among identical lines,
not by line number: adding code above a finding or re-indenting it must not make it "new",
while a second copy of the same line, or an edit of the line itself, must.
"""

from __future__ import annotations

import hashlib
import io
import json
import posixpath
import tokenize
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Iterable, Sequence

from neuronize import __version__
from neuronize.sources.write import write_bytes_atomic
from neuronize.types import Finding

FORMAT_VERSION = 1


@dataclass(frozen=True, order=True)
class BaselineEntry:
    """One accepted finding. ``path`` is posix and normalised (see :func:`normalise_path`)."""

    rule: str
    path: str
    fingerprint: str


def normalise_path(path: str) -> str:
    """``./a.py``, ``a.py`` and ``sub/../a.py`` are one file; separators become ``/``."""
    return posixpath.normpath(path.replace("\\", "/"))


def fingerprint(rule: str, code_line: str, occurrence: int) -> str:
    """A short stable hash of the rule, the whitespace-normalised line and the occurrence index."""
    normalised = " ".join(code_line.split())
    digest = hashlib.sha256(f"{rule}\0{normalised}\0{occurrence}".encode("utf-8", "replace"))
    return digest.hexdigest()[:16]


def entries_for(path: str, source: bytes, findings: Sequence[Finding]) -> list[BaselineEntry]:
    """One entry per finding, in the order of ``findings``.

    Occurrence indices count in source order (line, column), whatever order ``findings`` is in,
    so the same file always gives the same entries.
    """
    path = normalise_path(path)
    lines = _lines(source)
    normalised = [" ".join(_line(lines, f.line).split()) for f in findings]
    order = sorted(range(len(findings)),
                   key=lambda i: (findings[i].line, findings[i].column, findings[i].end_line,
                                  findings[i].end_column, findings[i].rule))
    seen: dict[tuple[str, str], int] = {}
    result: list[BaselineEntry | None] = [None] * len(findings)
    for i in order:
        key = (findings[i].rule, normalised[i])
        occurrence = seen.get(key, 0)
        seen[key] = occurrence + 1
        result[i] = BaselineEntry(findings[i].rule, path,
                                  fingerprint(findings[i].rule, normalised[i], occurrence))
    return [entry for entry in result if entry is not None]


def new_findings(path: str, source: bytes, findings: Sequence[Finding],
                 baseline: frozenset[BaselineEntry]) -> list[Finding]:
    """The findings of one file that the baseline does not accept, in their given order."""
    entries = entries_for(path, source, findings)
    return [f for f, entry in zip(findings, entries, strict=False) if entry not in baseline]


def write_baseline(file: Path, entries: Iterable[BaselineEntry]) -> None:
    """Write a sorted, deduplicated baseline, atomically, one entry per line for small diffs."""
    by_path: dict[str, list[BaselineEntry]] = {}
    for entry in sorted({BaselineEntry(e.rule, normalise_path(e.path), e.fingerprint)
                            for e in entries}, key=lambda e: (e.path, e.rule, e.fingerprint)):
        by_path.setdefault(entry.path, []).append(entry)
    out = ["{", f'  "version": {FORMAT_VERSION},', f'  "neuronize": {json.dumps(__version__)},',
           '  "files": {' + ("" if by_path else "}")]
    for n, (path, group) in enumerate(by_path.items()):
        out.append(f"    {json.dumps(path)}: [")
        out.extend(f'      {{"rule": {json.dumps(e.rule)}, "fingerprint": {json.dumps(e.fingerprint)}}}'
                   + ("," if k < len(group) - 1 else "") for k, e in enumerate(group))
        out.append("    ]" + ("," if n < len(by_path) - 1 else ""))
    if by_path:
        out.append("  }")
    out.append("}")
    write_bytes_atomic(Path(file), ("\n".join(out) + "\n").encode("utf-8"))


def load_baseline(file: Path) -> frozenset[BaselineEntry]:
    """The entries of a baseline file; ``ValueError`` (one line, naming the file) if unusable."""
    try:
        text = Path(file).read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"{file}: cannot read baseline: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ValueError(f"{file}: baseline is not UTF-8 (byte {exc.start})") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{file}: baseline is not valid JSON: {exc.msg} "
                         f"(line {exc.lineno}, column {exc.colno})") from exc

    def bad(problem: str) -> ValueError:
        return ValueError(f"{file}: not a neuronize baseline: {problem}")

    if not isinstance(data, dict):
        raise bad("expected a JSON object")
    if data.get("version") != FORMAT_VERSION:
        raise bad(f"unsupported version {data.get('version')!r} (expected {FORMAT_VERSION})")
    files = data.get("files")
    if not isinstance(files, dict):
        raise bad('"files" must be an object of path -> list of entries')
    entries: set[BaselineEntry] = set()
    for path, group in files.items():
        if not isinstance(group, list):
            raise bad(f"{path!r} must map to a list")
        for item in group:
            if not (isinstance(item, dict) and isinstance(item.get("rule"), str)
                    and isinstance(item.get("fingerprint"), str)):
                raise bad(f'{path!r}: each entry needs string "rule" and "fingerprint"')
            entries.add(BaselineEntry(item["rule"], normalise_path(path), item["fingerprint"]))
    return frozenset(entries)


# -- helpers -------------------------------------------------------------------------------------

def _lines(source: bytes) -> list[str]:
    """The file's lines, numbered as the parser numbers them (``\\r\\n``, ``\\r``, ``\\n``)."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
    except (SyntaxError, LookupError):
        encoding = "utf-8"
    try:
        text = source.decode(encoding, errors="replace")
    except LookupError:
        text = source.decode("utf-8", errors="replace")
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _line(lines: list[str], number: int) -> str:
    return lines[number - 1] if 1 <= number <= len(lines) else ""
