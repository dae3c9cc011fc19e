"""Run the engine over files: discovery, parallel analysis, writing, the baseline, results as
values. Never prints, never exits. :func:`run` does a whole run from a :class:`RunRequest` (what
the command line does); the steps are here to use one by one too.

Workers get paths and return small values; only the parent process writes files.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from neuronize.decision.baseline import BaselineEntry, entries_for, load_baseline, new_findings, write_baseline
from neuronize.sources.cache import ResultCache, default_directory
from neuronize.sources.config import Config, ConfigError
from neuronize.analysis.prefilter import TokenFilter, prefilter_for
from neuronize.presenting.progress import Progress
from neuronize.analysis.project_facts import project_facts
from neuronize.analysis.project_packages import top_level_packages
from neuronize.analysis.vendor_engines import engine_of, vendor_engines
from neuronize.sources.line_length import line_length_for
from neuronize.sources.torch_requirement import admits_old_torch, newest_releases, oldest_releases
from neuronize.registry import SelectionError, all_rules
from neuronize.rule_index import CLAIMER, by_id, catalogue
from neuronize.sources.settings import Overrides, Resolver, describe
from neuronize.sources.discover import Discovered, discover
from neuronize.sources.kinds import SourceKind, kind_by_content, kind_by_name, parse_kinds
from neuronize.sources.write import WriteRefused, read_source, remove_stale_temp_files, write_atomic
from neuronize.types import FileError, FileResult, Finding, Options, RunResult, Skipped, SourceResult

if TYPE_CHECKING:
    from neuronize.transform import Transform
    from concurrent.futures import Future, ProcessPoolExecutor

#: below this many bytes in all, worker processes cost more than they save
PARALLEL_THRESHOLD = 2_000_000


@dataclass(frozen=True)
class Job:
    """What a worker needs for one file that must really be analysed: small and picklable
    (a path, not its bytes: the parent holds no corpus in memory while workers run)."""

    path: str
    rule_ids: tuple[str, ...]
    options: Options
    fix: bool
    cache_dir: str | None = None  # None: no cache
    kind: SourceKind = SourceKind.PYTHON


def _cheap_outcome(path: Path, rule_ids: tuple[str, ...], options: Options, fix: bool,
                   cache: ResultCache | None, kind: SourceKind = SourceKind.PYTHON
                   ) -> tuple[SourceResult, bytes | None] | Job:
    """What the parent can answer without parsing (unreadable, no candidate token, cached),
    with the bytes it read; otherwise the job for a worker."""
    try:
        source = read_source(path)
    except IsADirectoryError:
        return SourceResult(error=FileError("is a directory")), None
    except OSError as exc:
        return SourceResult(error=FileError(f"cannot read: {exc.strerror or exc}")), None
    key = cache.key(source, (*rule_ids, f"kind={kind}"), options, fix) if cache is not None else ""
    hit = cache.get(key) if cache is not None else None
    if hit is not None:
        return hit, source
    if not _prefilter(rule_ids, kind).search(source):
        # kept too: a warm run looks up one hash per file instead of scanning for every token
        skipped = SourceResult(skipped=True)
        if cache is not None:
            cache.put(key, skipped)
        return skipped, None
    return Job(str(path), rule_ids, options, fix, None if cache is None else str(cache.directory), kind)


def _analyse_job(job: Job) -> tuple[SourceResult, bytes | None]:
    """Analyse one file in a worker; the bytes come back only if the file would change."""
    try:
        source = read_source(Path(job.path))
    except OSError as exc:
        return SourceResult(error=FileError(f"cannot read: {exc.strerror or exc}")), None
    from neuronize.analysis.any_kind import run_kind

    rules = _rules_by_id(job.rule_ids)
    prefilter = _prefilter(job.rule_ids, job.kind)
    result = run_kind(source, job.kind, rules, job.options, path=job.path, prefilter=prefilter, fix=job.fix)
    cache = _cache(job.cache_dir)
    if cache is not None:
        cache.put(cache.key(source, (*job.rule_ids, f"kind={job.kind}"), job.options, job.fix), result)
    return result, (source if result.changed else None)


#: how many allocations (less deallocations) start a worker's collection of the youngest objects
#: (Python's default: 700). A parse makes millions of objects that live as long as their file's
#: tree: collected that often, they were scanned again and again, up to the whole tree, for cycles
#: they do not have (about a tenth of the analysis time on the benchmark repositories)
_WORKER_GC_THRESHOLD = 10_000


def _start_worker() -> None:
    """Workers leave Ctrl-C to the parent, which stops the run and reports it once, and look for
    reference cycles less often (:data:`_WORKER_GC_THRESHOLD`), and never among the objects the
    parent had when it started them (the rules, libcst: they live as long as the worker; a full
    collection scanned them all, and wrote to the pages the worker shares with the parent)."""
    import gc
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    gc.freeze()
    gc.set_threshold(_WORKER_GC_THRESHOLD, *gc.get_threshold()[1:])


_CACHES: dict[str, ResultCache] = {}


def _cache(directory: str | None) -> ResultCache | None:
    """One cache object per directory and process (it memoises the key prefix)."""
    if directory is None:
        return None
    if directory not in _CACHES:
        _CACHES[directory] = ResultCache(Path(directory))
    return _CACHES[directory]


_RULE_CACHE: dict[tuple[str, ...], tuple[type[Transform], ...]] = {}
_FILTER_CACHE: dict[tuple[tuple[str, ...], SourceKind], TokenFilter] = {}


def _rules_by_id(ids: tuple[str, ...]) -> tuple[type[Transform], ...]:
    from neuronize.decision.claims import claimer

    if ids not in _RULE_CACHE:
        known = {r.id: r for r in all_rules()}
        _RULE_CACHE[ids] = tuple(claimer(known[i[len(CLAIMER):]]) if i.startswith(CLAIMER) else known[i]
                                 for i in ids)
    return _RULE_CACHE[ids]


def _prefilter(ids: tuple[str, ...], kind: SourceKind) -> TokenFilter:
    if (ids, kind) not in _FILTER_CACHE:
        _FILTER_CACHE[ids, kind] = prefilter_for(by_id(ids), kind)
    return _FILTER_CACHE[ids, kind]


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
    *,
    fix: bool = True,
    config: Config | None = None,
    force_exclude: bool = False,
    cache: bool = True,
    progress: Progress | None = None,
    resolver: Resolver | None = None,
    kinds: Sequence[SourceKind] | None = None,
    cache_dir: Path | None = None,
) -> RunResult:
    """Analyse every discovered file (in worker processes when it pays) and return the results.

    ``config`` supplies the project's excludes and per-file ignores; ``resolver`` instead gives
    each file the settings of its nearest configuration (``rules``, ``options``, ``config`` and
    ``kinds`` are then unused); ``kinds`` limits the kinds of source looked at (None: every kind,
    see sources/kinds.py); ``fix=False`` analyses without computing rewritten files (``check``);
    results are cached by content in ``cache_dir`` (None: $NEURONIZE_CACHE_DIR, else
    ~/.cache/neuronize) unless ``cache=False``; ``progress`` is told the number of files, then
    each one as it finishes.
    """
    if resolver is None:
        resolver = Resolver.fixed(tuple(rules), options, config, kinds)
    files, skipped = discover_files(paths, resolver, force_exclude)
    own = top_level_packages(f.display for f in files)  # NRN903: not the project's own imports
    store = _cache(str(cache_dir or default_directory())) if cache else None
    facts = project_facts(files, store)
    # each file names the first other file that makes float16 (NRN205): sorted once, not per file
    float16 = sorted((shown, path) for path, shown in facts.float16_sources.items())
    absolute = [Path(os.path.abspath(f.path)) for f in files]
    engines = vendor_engines(absolute)
    sizes = _sizes(files)
    order = sorted(range(len(files)), key=lambda i: -sizes[i])  # largest first: no long tail
    if progress is not None:
        progress.start(len(files))
    results: dict[int, SourceResult] = {}
    sources: dict[int, bytes | None] = {}

    def done(i: int, result: SourceResult, source: bytes | None) -> None:
        results[i] = result
        sources[i] = source if result.changed else None  # kept only for diffs and writes
        if progress is not None:
            progress.advance()

    workers = jobs if jobs is not None else (os.cpu_count() or 1)
    pool = _Workers(workers if len(files) > 1 and sum(sizes) >= PARALLEL_THRESHOLD else 1, done)
    try:
        for i in order:
            settings = resolver.for_path(files[i].path)
            options = _options_here(settings.options, files[i].path, own)
            if files[i].path in facts.kernels:
                options = dataclasses.replace(options, kernel_import=facts.kernels[files[i].path])
            if files[i].path in facts.kernel_exports:
                options = dataclasses.replace(options, kernel_exports=facts.kernel_exports[files[i].path])
            if files[i].path in facts.kernel_feeds:
                options = dataclasses.replace(options, kernel_feeds=facts.kernel_feeds[files[i].path])
            if facts.checks_host and not options.project_checks_host:
                options = dataclasses.replace(options, project_checks_host=True)
            if files[i].path in facts.imported:
                options = dataclasses.replace(options, imported_elsewhere=True)
            if facts.python2:
                options = dataclasses.replace(options, python2=True)
            if facts.extensions:
                options = dataclasses.replace(options, project_extensions=facts.extensions)
            if facts.probe_flags:
                options = dataclasses.replace(options, probe_flags=facts.probe_flags)
            if facts.wrappers:
                options = dataclasses.replace(options, library_wrappers=facts.wrappers)
            if facts.placed_loaders:
                options = dataclasses.replace(options, placed_loaders=facts.placed_loaders)
            if facts.device_sinks:
                options = dataclasses.replace(options, device_sinks=facts.device_sinks)
            if facts.cuda_setups:
                options = dataclasses.replace(options, cuda_setups=facts.cuda_setups)
            if facts.backend_keys:
                options = dataclasses.replace(options, backend_keys=facts.backend_keys)
            if files[i].path in facts.program_pins:
                options = dataclasses.replace(options, program_pin=facts.program_pins[files[i].path])
            if files[i].path in facts.generator_partners:
                options = dataclasses.replace(options, generator_partner=facts.generator_partners[files[i].path])
            elsewhere = next((shown for shown, path in float16 if path != files[i].path), None)
            if elsewhere is not None:
                options = dataclasses.replace(options, float16_elsewhere=elsewhere)
            if facts.op_namespaces:
                options = dataclasses.replace(options, op_namespaces=facts.op_namespaces)
            engine = engine_of(absolute[i], engines) if engines else None
            if engine is not None:
                options = dataclasses.replace(options, vendor_engine=engine)
            outcome = _cheap_outcome(files[i].path, settings.run_ids(files[i].path, files[i].kind),
                                     options, fix, store, files[i].kind)
            if isinstance(outcome, Job):
                pool.analyse(i, outcome)
            else:
                done(i, *outcome)
        pool.wait()
    finally:
        pool.close()
    run = RunResult(skipped=skipped)
    for i, f in enumerate(files):
        result = results[i]
        run.files.append(FileResult(f.display, f.path, result, sources[i] if result.changed else None))
    return run


class _Workers:
    """Analyses jobs in this process (one worker), or in worker processes started at the first
    job (a warm run never starts them) and fed while the parent goes on reading and filtering:
    both overlap. ``done`` is told each job's index and outcome."""

    def __init__(self, workers: int, done: Callable[[int, SourceResult, bytes | None], None]) -> None:
        self.workers = workers
        self.done = done
        self.pool: ProcessPoolExecutor | None = None
        self.futures: dict[Future[tuple[SourceResult, bytes | None]], int] = {}

    def analyse(self, i: int, job: Job) -> None:
        if self.workers == 1:
            self.done(i, *_analyse_job(job))
            return
        if self.pool is None:
            from concurrent.futures import ProcessPoolExecutor

            self.pool = ProcessPoolExecutor(max_workers=self.workers, initializer=_start_worker)
        self.futures[self.pool.submit(_analyse_job, job)] = i

    def wait(self) -> None:
        """Until every job submitted has finished."""
        if self.futures:
            from concurrent.futures import as_completed

            for future in as_completed(self.futures):
                self.done(self.futures[future], *future.result())

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)


def _options_here(options: Options, path: Path, own: tuple[str, ...]) -> Options:
    """A file's options with what the run knows: the project's own packages and line length
    (the same for every file of a folder: made once per folder)."""
    return _options_in(options, os.path.dirname(os.path.abspath(path)), own)


@functools.lru_cache(maxsize=1024)
def _options_in(options: Options, folder: str, own: tuple[str, ...]) -> Options:
    if not options.own_packages:
        options = dataclasses.replace(options, own_packages=own)
    if options.line_length is None:  # lines the fixes write stay within the project's length
        options = dataclasses.replace(options, line_length=line_length_for(folder))
    if not options.old_torch and admits_old_torch(folder):
        options = dataclasses.replace(options, old_torch=True)
    if options.newest_releases is None:
        options = dataclasses.replace(options, newest_releases=newest_releases(folder))
    if options.oldest_releases is None:
        options = dataclasses.replace(options, oldest_releases=oldest_releases(folder))
    return options


def discover_files(paths: Iterable[str], resolver: Resolver, force_exclude: bool = False
                   ) -> tuple[list[Discovered], list[Skipped]]:
    """The files a run looks at (``--show-files``), each folder with its own configuration's
    excludes and kinds."""
    files, skipped = discover(paths, resolver, force_exclude,  # type: ignore[arg-type]  # duck-typed Excludes
                              resolver.discovery_kinds())
    return [f for f in files if f.kind in resolver.for_path(f.path).kinds], skipped


def write_changes(run: RunResult) -> RunResult:
    """Write every changed file atomically; a refused write becomes that file's error.

    Temp files a killed earlier run left beside the files of this run are removed first.
    """
    folders = {f.path.absolute().parent for f in run.files if f.path is not None}
    out = RunResult(skipped=run.skipped, stale_removed=remove_stale_temp_files(sorted(folders)))
    out.files.extend(write_file(f) for f in run.files)
    return out


def write_file(f: FileResult) -> FileResult:
    """Write one file's output atomically if it changed: ``f`` as written, or with the reason
    it was not as its error (the findings stay)."""
    if not f.result.changed or f.path is None or f.source is None:
        return f
    assert f.result.output is not None
    try:
        write_atomic(f.path, f.source, f.result.output)
    except WriteRefused as exc:
        failed = SourceResult(findings=f.result.findings, error=FileError(str(exc)))
        return FileResult(f.display, f.path, failed, f.source)
    except OSError as exc:
        failed = SourceResult(findings=f.result.findings, error=FileError(f"cannot write: {exc}"))
        return FileResult(f.display, f.path, failed, f.source)
    return FileResult(f.display, f.path, _as_written(f), f.source, written=True, as_read=f.result.findings)


def _as_written(f: FileResult) -> SourceResult:
    """The result with its findings at their line and column in the file as written (a notebook
    cell's lines keep their numbering)."""
    if f.display.endswith(".ipynb") or f.source is None or f.result.output is None:
        return f.result
    from neuronize.analysis.positions import as_written

    findings = as_written(f.result.findings, f.source, f.result.output)
    return dataclasses.replace(f.result, findings=findings)


def analyse_stdin(source: bytes, display: str, rules: Sequence[type[Transform]],
                  options: Options, *, fix: bool = True) -> RunResult:
    from neuronize.analysis.any_kind import run_kind

    name = Path(display)
    kind = kind_by_name(name) or kind_by_content(name, source) or SourceKind.PYTHON
    result = run_kind(source, kind, rules, options, path=display, fix=fix)
    return RunResult(files=[FileResult(display, None, result, source)])


# -- baseline --------------------------------------------------------------------------------
def _baseline_groups(f: FileResult, baseline_dir: Path) -> list[tuple[str, bytes, list[Finding]]]:
    """(baseline path, source the lines refer to, findings) for one file; cells for notebooks."""
    if not f.result.findings or f.path is None:
        return []
    key = os.path.relpath(os.path.abspath(f.path), os.path.abspath(baseline_dir))
    try:
        # the findings of a file this run wrote are at their place in the file as written
        source = f.result.output if f.written and f.result.output is not None else (
            f.source if f.source is not None else read_source(f.path))
    except OSError:
        return []
    if not f.display.endswith(".ipynb"):
        return [(key, source, list(f.result.findings))]
    from neuronize.analysis.notebooks import findings_by_cell

    return [(key, cell_source, found) for cell_source, found in findings_by_cell(source, f.result.findings)]


def baseline_entries(run: RunResult, baseline_file: Path) -> list[BaselineEntry]:
    """Baseline entries for every finding of the run, paths relative to the baseline's folder."""
    folder = Path(baseline_file).absolute().parent
    return [entry for f in run.files for key, source, found in _baseline_groups(f, folder)
            for entry in entries_for(key, source, found)]


def hold_back_baselined(run: RunResult, baseline: frozenset[BaselineEntry], baseline_file: Path
                        ) -> RunResult:
    """The run with the edits of baselined findings taken out (``fix --baseline`` leaves
    accepted findings as they are): see :func:`neuronize.presenting.review.hold_back`."""
    from neuronize.presenting.review import hold_back

    folder = Path(baseline_file).absolute().parent
    out = RunResult(skipped=run.skipped)
    for f in run.files:
        groups = _baseline_groups(f, folder) if f.result.changed else []
        fresh = {id(x) for key, source, found in groups for x in new_findings(key, source, found, baseline)}
        accepted = {id(x) for _, _, found in groups for x in found} - fresh
        out.files.append(hold_back(f, _one_of(accepted)) if accepted else f)
    return out


def _one_of(ids: set[int]) -> Callable[[Finding], bool]:
    return lambda finding: id(finding) in ids


def apply_baseline(run: RunResult, baseline: frozenset[BaselineEntry], baseline_file: Path
                   ) -> tuple[RunResult, int]:
    """The run with baselined findings dropped, and how many were dropped."""
    folder = Path(baseline_file).absolute().parent
    out = RunResult(skipped=run.skipped)
    dropped = 0
    for f in run.files:
        groups = _baseline_groups(f, folder)
        if not groups:
            out.files.append(f)
            continue
        kept = [x for key, source, found in groups for x in new_findings(key, source, found, baseline)]
        dropped += len(f.result.findings) - len(kept)
        result = dataclasses.replace(f.result, findings=tuple(kept))
        out.files.append(dataclasses.replace(f, result=result))
    return out, dropped


# -- a whole run -----------------------------------------------------------------------------
Mode = Literal["check", "fix", "report"]


@dataclass(frozen=True)
class RunRequest:
    """What one run is asked to do: the command line's choices as a value (see :func:`run`).

    Rule codes and kinds may be given comma-separated, as on the command line.
    """

    paths: tuple[str, ...] = ()
    #: code to look at instead of files (the command line's ``-``), named ``stdin_filename``
    stdin: bytes | None = None
    stdin_filename: str | None = None
    #: check: the findings; fix: the edits too (written unless ``write`` is False); report: both,
    #: never written
    mode: Mode = "check"
    write: bool = True
    select: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    #: None: each configuration's choice
    unsafe_fixes: bool | None = None
    target: str | None = None
    #: one configuration file for every file (None: each file's nearest one)
    config_file: Path | None = None
    unused_suppressions: bool = False
    kinds: tuple[str, ...] = ()
    exclude_kinds: tuple[str, ...] = ()
    #: apply the excludes to the paths named too
    force_exclude: bool = False
    #: worker processes (None: every core)
    jobs: int | None = None
    cache: bool = True
    #: where results are cached (None: $NEURONIZE_CACHE_DIR, else ~/.cache/neuronize)
    cache_dir: Path | None = None
    #: report only the findings this baseline does not hold (and, in fix mode, leave theirs unedited)
    baseline: Path | None = None
    #: record every finding in this baseline file instead of filtering by one
    write_baseline: Path | None = None
    #: look at nothing: the result's ``settings`` (show_settings) or its files, not analysed (show_files)
    show_settings: bool = False
    show_files: bool = False

    @property
    def writes(self) -> bool:
        """Whether the run writes the files it changes."""
        return self.mode == "fix" and self.write and self.stdin is None

    def first_file(self) -> Path:
        """The file whose settings stand for the run (``show_settings``, standard input)."""
        paths = [p for p in self.paths if p != "-"]
        if self.stdin is not None or not paths:
            return Path(self.stdin_filename or "-")
        first = Path(paths[0])
        return first / "-" if first.is_dir() else first


#: the write step of a fix run: the run as proposed in, the run as written out
Writer = Callable[[RunResult], RunResult]


def run(request: RunRequest, *, progress: Progress | None = None, writer: Writer | None = None) -> RunResult:
    """Do what ``request`` asks, in order: settings, discovery, analysis, the baseline's hold on
    the edits, writing (fix mode), the baseline's filter (or a new baseline). Prints nothing:
    errors come back as the result's ``error`` (the run) or a file's error.

    ``progress`` is told the files as they are analysed and closed after; ``writer`` replaces
    :func:`write_changes` as the write step (the command line's interactive review).
    """
    try:
        resolver = _resolver(request)
        baseline = load_baseline(request.baseline) if request.baseline is not None else None
    except ValueError as exc:  # a bad selection, configuration, kind or baseline file
        return RunResult(error=str(exc))
    if request.show_settings:
        return RunResult(settings=describe(resolver.for_path(request.first_file()), request.first_file()))
    try:
        result = _look(request, resolver, progress)
    except (SelectionError, ConfigError) as exc:  # met in a folder's own configuration
        return RunResult(error=str(exc))
    configs = {f.path: resolver.for_path(f.path).config.path for f in result.files if f.path is not None}
    result.configs = configs  # the writer's run has them too
    if not request.show_files:
        result = _baseline_and_write(request, result, baseline, writer or write_changes)
    result.configs = configs
    result.unsafe_fixes = any(s.options.unsafe_fixes for s in resolver.used())
    return result


def _split(values: Sequence[str]) -> tuple[str, ...]:
    return tuple(code.strip() for value in values for code in value.split(",") if code.strip())


def _resolver(request: RunRequest) -> Resolver:
    """Settings per file: each file's nearest configuration, the request on top. The settings of
    the first file are resolved at once, so a bad option or configuration fails before any work
    (configurations met later fail when met)."""
    overrides = Overrides(
        select=_split(request.select), extend_select=_split(request.extend_select),
        ignore=_split(request.ignore), unsafe_fixes=request.unsafe_fixes, target=request.target,
        config_file=request.config_file, report_unused_suppressions=request.unused_suppressions,
        kinds=parse_kinds(request.kinds), exclude_kinds=parse_kinds(request.exclude_kinds),
    )
    # a run whose files are all cached reads what it needs of the rules from the cache too
    catalogue(_cache(str(request.cache_dir or default_directory())) if request.cache else None)
    resolver = Resolver(overrides)
    resolver.for_path(request.first_file())
    return resolver


def _look(request: RunRequest, resolver: Resolver, progress: Progress | None) -> RunResult:
    """The files, analysed (``show_files``: only found)."""
    if request.show_files:
        files, skipped = discover_files(request.paths, resolver, request.force_exclude)
        return RunResult(files=[FileResult(f.display, f.path, SourceResult()) for f in files], skipped=skipped)
    fix = request.mode != "check"
    if request.stdin is not None:
        name = request.first_file()
        settings = resolver.for_path(name)
        ids = settings.rule_ids(name)
        return analyse_stdin(request.stdin, str(name), _rules_by_id(ids), settings.options, fix=fix)
    try:
        return analyse_paths(request.paths, (), jobs=request.jobs, fix=fix, force_exclude=request.force_exclude,
                             cache=request.cache, cache_dir=request.cache_dir, progress=progress,
                             resolver=resolver)
    finally:
        if progress is not None:
            progress.close()


def _baseline_and_write(request: RunRequest, result: RunResult, baseline: frozenset[BaselineEntry] | None,
                        writer: Writer) -> RunResult:
    """The baseline, in the one place it is handled: in fix mode its findings keep their code as
    it is; the others are written; then the baseline hides its findings, or a new one records
    every finding left."""
    if baseline is not None and request.baseline is not None and request.mode == "fix":
        result = hold_back_baselined(result, baseline, request.baseline)
    if request.writes:
        result = writer(result)
    if request.write_baseline is not None:
        entries = baseline_entries(result, request.write_baseline)
        write_baseline(request.write_baseline, entries)
        result.baseline_written = len(entries)
    elif baseline is not None and request.baseline is not None:
        result, baselined = apply_baseline(result, baseline, request.baseline)
        result.baselined = baselined
    return result
