"""Run the engine over files: discovery, parallel analysis, results as values. Never prints.

Workers get paths and return small values; only the parent process writes files.
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

from neuronize.context import Options
from neuronize.engine import FileError, SourceResult, prefilter_for, run_source
from neuronize.registry import all_rules
from neuronize.sources.discover import Discovered, Skipped, discover
from neuronize.sources.write import WriteRefused, read_source, write_atomic
from neuronize.transform import Transform

#: below this many bytes in all, worker processes cost more than they save
PARALLEL_THRESHOLD = 2_000_000


@dataclass(frozen=True)
class FileResult:
    """One file's outcome. ``source`` is kept only when the file would change (for diffs)."""

    display: str
    path: Path | None
    result: SourceResult
    source: bytes | None = None
    written: bool = False

    @property
    def error(self) -> FileError | None:
        return self.result.error


@dataclass
class RunResult:
    files: list[FileResult] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    @property
    def errors(self) -> list[FileResult]:
        return [f for f in self.files if f.error is not None]

    @property
    def changed(self) -> list[FileResult]:
        return [f for f in self.files if f.result.changed]


def _analyse_file(job: tuple[str, Sequence[str], Options]) -> tuple[SourceResult, bytes | None]:
    path, rule_ids, options = job
    rules = _rules_by_id(tuple(rule_ids))
    try:
        source = read_source(Path(path))
    except IsADirectoryError:
        return SourceResult(error=FileError("is a directory")), None
    except OSError as exc:
        return SourceResult(error=FileError(f"cannot read: {exc.strerror or exc}")), None
    result = run_source(source, rules, options, path=path, prefilter=_prefilter(tuple(rule_ids)))
    return result, (source if result.changed else None)


_RULE_CACHE: dict[tuple[str, ...], tuple[type[Transform], ...]] = {}
_FILTER_CACHE: dict[tuple[str, ...], object] = {}


def _rules_by_id(ids: tuple[str, ...]) -> tuple[type[Transform], ...]:
    if ids not in _RULE_CACHE:
        by_id = {r.id: r for r in all_rules()}
        _RULE_CACHE[ids] = tuple(by_id[i] for i in ids)
    return _RULE_CACHE[ids]


def _prefilter(ids: tuple[str, ...]):  # type: ignore[no-untyped-def]
    if ids not in _FILTER_CACHE:
        _FILTER_CACHE[ids] = prefilter_for(_rules_by_id(ids))
    return _FILTER_CACHE[ids]


def _sizes(files: Sequence[Discovered]) -> list[int]:
    sizes = []
    for f in files:
        try:
            sizes.append(f.path.stat().st_size)
        except OSError:
            sizes.append(0)
    return sizes


def analyse_paths(
    paths: Iterable[str],
    rules: Sequence[type[Transform]],
    options: Options = Options(),
    jobs: int | None = None,
) -> RunResult:
    """Analyse every discovered file (in worker processes when it pays) and return the results."""
    files, skipped = discover(paths)
    rule_ids = tuple(r.id for r in rules)
    sizes = _sizes(files)
    order = sorted(range(len(files)), key=lambda i: -sizes[i])  # largest first: no long tail
    job_list = [(str(files[i].path), rule_ids, options) for i in order]
    workers = jobs if jobs is not None else (os.cpu_count() or 1)
    outcomes: list[tuple[SourceResult, bytes | None]]
    if workers > 1 and len(files) > 1 and sum(sizes) >= PARALLEL_THRESHOLD:
        chunk = max(1, min(32, len(job_list) // (workers * 8)))
        with ProcessPoolExecutor(max_workers=workers) as pool:
            outcomes = list(pool.map(_analyse_file, job_list, chunksize=chunk))
    else:
        outcomes = [_analyse_file(job) for job in job_list]
    by_index = dict(zip(order, outcomes))
    run = RunResult(skipped=skipped)
    for i, f in enumerate(files):
        result, source = by_index[i]
        run.files.append(FileResult(f.display, f.path, result, source))
    return run


def write_changes(run: RunResult) -> RunResult:
    """Write every changed file atomically; a refused write becomes that file's error."""
    out = RunResult(skipped=run.skipped)
    for f in run.files:
        if not f.result.changed or f.path is None or f.source is None:
            out.files.append(f)
            continue
        assert f.result.output is not None
        try:
            write_atomic(f.path, f.source, f.result.output)
        except WriteRefused as exc:
            failed = SourceResult(findings=f.result.findings, error=FileError(str(exc)))
            out.files.append(FileResult(f.display, f.path, failed, f.source))
            continue
        except OSError as exc:
            failed = SourceResult(findings=f.result.findings, error=FileError(f"cannot write: {exc}"))
            out.files.append(FileResult(f.display, f.path, failed, f.source))
            continue
        out.files.append(FileResult(f.display, f.path, f.result, f.source, written=True))
    return out


def analyse_stdin(source: bytes, display: str, rules: Sequence[type[Transform]],
                  options: Options) -> RunResult:
    result = run_source(source, rules, options, path=display)
    return RunResult(files=[FileResult(display, None, result, source)])
