"""How ``check`` and ``fix`` show findings to a person: ruff's ``full`` format (the source line
and a caret under the code), ``--statistics``, the one-line summary, the default format.
(When to use colour is :func:`neuronize.presenting.diff.wants_color`'s, beside the styles.)

The machine formats (JSON, SARIF, GitHub annotations, the Markdown report) and the one-line
``concise`` form are :mod:`neuronize.presenting.report`'s; this module only adds the human views on top.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO

from neuronize.presenting.diff import Style, decode
from neuronize.presenting.report import _pending, counted, finding_tag, location
from neuronize.sources.discover import SOURCE_SUFFIXES
from neuronize.types import FileResult, Finding, RunResult, Safety

#: lines of a multi-line finding shown before the rest is elided
MAX_LINES = 3
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def default_format(stream: IO[str] | IO[bytes]) -> str:
    """``full`` on a terminal, ``concise`` (one line a finding) in a pipe, a log or a file."""
    try:
        return "full" if stream.isatty() else "concise"
    except (AttributeError, ValueError):
        return "concise"


def full_findings(run: RunResult, style: Style, include_applied: bool = True,
                  read: Callable[[Path], bytes] = Path.read_bytes) -> list[str]:
    """Each finding as ruff's full format shows it: a headline, where, and the code under it::

        NRN102 [safe fix] `.cuda()` -> `.to("neuron")`
          --> train.py:2:9
           |
         2 | batch = batch.cuda()
           |         ^^^^^^^^^^^^
           |

    ``read`` reads a file whose bytes the run did not keep (``check`` keeps none).
    """
    out: list[str] = []
    texts: dict[int, list[str] | None] = {}
    for f, finding in _pending(run, include_applied):
        out.append(f"{style.error(finding.rule)} {style.hunk('[' + finding_tag(f, finding) + ']')} "
                   f"{finding.text}")
        out.append(f"  {style.hunk('-->')} {location(f.display, finding)}")
        if id(f) not in texts:
            texts[id(f)] = _source_lines(f, read)
        lines = texts[id(f)]
        if lines is not None and finding.cell is not None:
            lines = _cell_lines(f, finding.cell, read)
        if lines is not None and 1 <= finding.line <= len(lines):
            out.extend(_snippet(lines, finding, style))
        out.append("")
    return out


def _source_lines(f: FileResult, read: Callable[[Path], bytes]) -> list[str] | None:
    """The lines the finding positions refer to: the file as it was read."""
    source = f.source
    if source is None and f.path is not None:
        try:
            source = read(f.path)
        except OSError:
            return None
    return None if source is None else _LINE_BREAK.split(decode(source))


def _cell_lines(f: FileResult, cell: int, read: Callable[[Path], bytes]) -> list[str] | None:
    from neuronize.sources.notebook import NotebookError, read_cells

    try:
        data = f.source if f.source is not None else read(f.path) if f.path is not None else None
        cells = read_cells(data) if data is not None else []
    except (OSError, NotebookError):
        return None
    for c in cells:
        if c.index == cell:
            return _LINE_BREAK.split(c.source.decode("utf-8", errors="replace"))
    return None


def _snippet(lines: list[str], finding: Finding, style: Style) -> list[str]:
    last = max(finding.line, finding.end_line)
    shown = list(range(finding.line, min(last, finding.line + MAX_LINES - 1, len(lines)) + 1))
    width = len(str(shown[-1]))
    bar = " " * (width + 1) + style.hunk("|")
    out = [bar]
    for number in shown:
        raw = lines[number - 1]
        text = raw.expandtabs()
        start = finding.column if number == finding.line else len(raw) - len(raw.lstrip()) + 1
        end = finding.end_column if number == finding.end_line else len(raw) + 1
        start_at = len(raw[:start - 1].expandtabs())
        end_at = len(raw[:max(end, start) - 1].expandtabs())
        gutter = style.hunk(f"{number:>{width}} |")
        out.append(f"{gutter} {text}".rstrip())
        out.append(f"{bar} {' ' * start_at}{style.error('^' * max(1, end_at - start_at))}")
    if shown[-1] < last:
        out.append(" " * (width + 1) + style.hunk(":") + f" ... {last - shown[-1]} more line(s)")
    out.append(bar)
    return out


def statistics(run: RunResult, unsafe_fixes: bool, include_applied: bool = True) -> list[str]:
    """``--statistics``: one line per rule, most frequent first (ruff's layout), then how many
    ``fix`` handles as run, how many only with ``--unsafe-fixes``, how many no fix handles::

        4  NRN102  [-] cuda-method           2 fixable, 1 with --unsafe-fixes, 1 not fixable

    ``[*]`` all fixable by ``fix`` as run, ``[ ]`` none fixable at all, ``[-]`` the others. The
    counts add up to ``check``'s summary.
    """
    counts: Counter[tuple[str, str]] = Counter()
    ways: dict[str, Counter[str]] = {}
    for _, finding in _pending(run, include_applied):
        counts[finding.rule, finding.name] += 1
        ways.setdefault(finding.rule, Counter())[_mark(finding, unsafe_fixes)] += 1
    if not counts:
        return []
    width = len(str(max(counts.values())))
    name_width = max(len(name) for _, name in counts)
    rows = sorted(counts.items(), key=lambda item: (-item[1], item[0][0]))
    words = {"[*]": "fixable", "[-]": "with --unsafe-fixes", "[ ]": "not fixable"}
    out = []
    for (rule, name), n in rows:
        here = ways[rule]
        mark = "[*]" if here["[*]"] == n else "[ ]" if here["[ ]"] == n else "[-]"
        detail = ", ".join(f"{here[key]} {word}" for key, word in words.items() if here[key])
        out.append(f"{n:>{width}}  {rule:<6}  {mark} {name:<{name_width}}  {detail}")
    return out


def _mark(finding: Finding, unsafe_fixes: bool) -> str:
    if not finding.fixable:
        return "[ ]"
    return "[*]" if finding.safety is Safety.SAFE or unsafe_fixes else "[-]"


def found_line(run: RunResult, unsafe_fixes: bool) -> str:
    """``check``'s summary: ``Found 12 findings in 3 files (7 fixable with `neuronize fix`, 3 with
    `--unsafe-fixes`).``, or ``All checks passed: no CUDA-specific code found.``"""
    findings = [(f, x) for f, x in _pending(run, True)]
    failed = len(run.errors) + len(run.missing)
    unchecked = f"; {_plural(failed, 'file')} could not be checked" if failed else ""
    if not findings:
        return (f"No findings{unchecked} (see the errors above)." if failed
                else "All checks passed: no CUDA-specific code found.")
    files = len({id(f) for f, _ in findings})
    marks = Counter(_mark(x, unsafe_fixes) for _, x in findings)
    fixable = []
    if marks["[*]"]:
        fixable.append(f"{marks['[*]']} fixable with `neuronize fix"
                       + (" --unsafe-fixes`" if unsafe_fixes else "`"))
    if marks["[-]"]:
        fixable.append(f"{marks['[-]']} with `--unsafe-fixes`")
    detail = f" ({', '.join(fixable)})" if fixable else ""
    return f"Found {_plural(len(findings), 'finding')} in {_plural(files, 'file')}{detail}{unchecked}."


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def nothing_found(paths: Sequence[str]) -> str:
    """Why a run found nothing to check: nothing there, or everything excluded."""
    where = ", ".join(paths) or "."
    for path in paths or (".",):
        for _, _, names in os.walk(path):
            if any(name.endswith(SOURCE_SUFFIXES) for name in names):
                return (f"no file to check in {where}: every Python file there is excluded "
                        "(.gitignore, the configuration's exclude, or a skipped folder such as "
                        "build/ or a virtual environment); see `--show-settings`")
        if os.path.isfile(path):
            return f"{path} is excluded by the configuration (--force-exclude); nothing checked"
    return f"no Python files or notebooks found in {where}; nothing checked"


def verbose_lines(run: RunResult) -> list[str]:
    """``-v``: which configuration each file used, and what the run skipped."""
    per_config: dict[str, int] = {}
    for f in run.files:
        if f.path is None:
            continue
        config = run.configs.get(f.path)
        key = str(config) if config is not None else "no configuration (defaults)"
        per_config[key] = per_config.get(key, 0) + 1
    lines = [f"{counted(n, 'file')} with settings from {key}" for key, n in per_config.items()]
    skipped = sum(1 for f in run.files if f.result.skipped)
    lines.append(f"{counted(len(run.files), 'file')} found, {skipped} without CUDA-specific tokens "
                 "(not parsed)")
    return lines
