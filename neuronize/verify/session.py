"""`neuronize verify` and `neuronize fix --verify`: migrate a copy, run the user's command before
and after on each simulated host, report, and (fix --verify) write only what no regression
points to.

Exit codes: 2 when the migration failed or a run could not start (nothing is proven on that
host); else 1 when a test that passed before fails after on some host (``fix --verify``: when
edits were held back); else 0.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path
from collections.abc import Callable, Sequence

from neuronize.audit.child.hosts import HOSTS
from neuronize.verify import render
from neuronize.verify.compare import Verification, compare
from neuronize.verify.runs import Run, run
from neuronize.verify.trees import Migration, apply_files, migrate, partial_tree

EXIT_CLEAN, EXIT_REGRESSION, EXIT_ERROR = 0, 1, 2
#: rounds of fix --verify: hold back the files regressions point to, run again
MAX_ROUNDS = 3


def parse_hosts(text: str) -> list[str]:
    hosts = [h.strip() for h in text.split(",") if h.strip()]
    unknown = [h for h in hosts if h not in HOSTS]
    if unknown or not hosts:
        raise ValueError(f"unknown host(s) {', '.join(unknown) or '(none)'}: choose among {', '.join(HOSTS)}")
    return hosts


class Runner:
    """The command's runs; the original tree's run on each host is made once."""

    def __init__(self, command: Sequence[str], max_seconds: float, progress: Callable[[str], None]) -> None:
        program = Path(command[0])
        # `.venv/bin/python -m pytest`: the environment is not copied, the command names the real one
        first = str(program.resolve()) if len(program.parts) > 1 and not program.is_absolute() and \
            program.exists() else command[0]
        self.command = [first, *command[1:]]
        self.max_seconds = max_seconds
        self.progress = progress
        self.originals: dict[str, Run] = {}

    def run(self, tree: Path, host: str, side: str) -> Run:
        self.progress(f"neuronize verify: {host} host, {side} the migration...")
        return run(self.command, tree, tree, host, side, self.max_seconds)

    def before(self, migration: Migration, host: str) -> Run:
        if host not in self.originals:
            self.originals[host] = self.run(migration.original, host, "before")
        return self.originals[host]


def check(runner: Runner, migration: Migration, tree: Path, hosts: Sequence[str], target: str | None,
          unsafe_fixes: bool, changed: bool) -> Verification:
    started = time.monotonic()
    results, not_started = [], []
    for host in hosts:
        before = runner.before(migration, host)
        if not before.started:
            not_started.append(before)
            continue
        after = runner.run(tree, host, "after") if changed else before
        if not after.started:
            not_started.append(after)
            continue
        results.append(compare(before, after, migration.hunks))
    return Verification(runner.command, target, unsafe_fixes, migration.original, migration, results, not_started,
                        time.monotonic() - started)


def _relative_paths(paths: Sequence[str], root: Path) -> list[str]:
    relative = []
    for path in paths or ["."]:
        absolute = (root / path).resolve()
        if absolute != root and root not in absolute.parents:
            raise ValueError(f"{path}: outside the current directory (verify copies the current directory)")
        relative.append(os.path.relpath(absolute, root))
    return relative


def _exit_code(v: Verification) -> int:
    if v.migration.error or v.not_started:
        return EXIT_ERROR
    return EXIT_REGRESSION if v.regressions else EXIT_CLEAN


def _show(v: Verification, output_format: str, say: Callable[[str], None]) -> None:
    if output_format == "json":
        say(render.to_json(v))
    elif output_format == "markdown":
        say(render.to_markdown(v))
    else:
        for line in render.to_text(v):
            say(line)


def run_verify(command: Sequence[str], paths: Sequence[str], *, target: str | None, unsafe_fixes: bool,
               hosts: Sequence[str], max_seconds: float, output_format: str, keep: bool, write: bool,
               say: Callable[[str], None], warn: Callable[[str], None]) -> int:
    """``write``: fix --verify (write what no regression points to)."""
    root = Path.cwd().resolve()
    try:
        relative = _relative_paths(paths, root)
    except ValueError as exc:
        warn(f"neuronize verify: error: {exc}")
        return EXIT_ERROR
    workdir = Path(tempfile.mkdtemp(prefix="neuronize-verify-"))
    started = time.monotonic()
    try:
        warn(f"neuronize verify: migrating a copy of {root} in {workdir}...")
        migration = migrate(root, workdir, relative, target, unsafe_fixes)
        if migration.error:
            warn(f"neuronize verify: error: the migration failed: {migration.error}")
            return EXIT_ERROR
        runner = Runner(command, max_seconds, warn)
        v = check(runner, migration, migration.migrated, hosts, target, unsafe_fixes, bool(migration.changed))
        if write:
            return _fix_verify(v, runner, root, workdir, hosts, output_format, say, warn, started)
        v.seconds = time.monotonic() - started
        _show(v, output_format, say)
        return _exit_code(v)
    finally:
        if keep:
            warn(f"neuronize verify: the trees are kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


def _fix_verify(v: Verification, runner: Runner, root: Path, workdir: Path, hosts: Sequence[str],
                output_format: str, say: Callable[[str], None], warn: Callable[[str], None],
                started: float) -> int:
    migration = v.migration
    held: dict[str, list[str]] = {}
    for round_number in range(1, MAX_ROUNDS + 1):
        if not v.regressions or v.not_started:
            break
        earlier = set(held)  # held back by the rounds before: the original is what ran
        for result in v.results:
            for change in result.regressions:
                reason = f"{result.host}: {change.test} {change.before} -> {change.after}"
                # a regression that points to no migrated file: nothing can be kept safely
                files = [f for f in change.files if f not in earlier] or migration.changed
                for file in files:
                    held.setdefault(file, []).append(reason)
        kept = [f for f in migration.changed if f not in held]
        if not kept:
            break
        tree = partial_tree(migration, kept, workdir / f"round-{round_number}" / migration.original.name)
        v = check(runner, migration, tree, hosts, v.target, v.unsafe_fixes, True)
    else:
        if v.regressions:  # the last round still regresses: write nothing
            for file in migration.changed:
                held.setdefault(file, []).append(f"still a regression after {MAX_ROUNDS} rounds")
    v.seconds = time.monotonic() - started
    _show(v, output_format, say)
    if migration.error or v.not_started:
        warn("neuronize fix --verify: nothing written (a run could not start)")
        return EXIT_ERROR
    kept = [f for f in migration.changed if f not in held]
    written, skipped = apply_files(migration, root, kept)
    warn(f"neuronize fix --verify: {len(written)} file(s) migrated and verified, {len(held)} held back")
    for file, reasons in sorted(held.items()):
        warn(f"  held back {file}: {'; '.join(reasons[:3])}" + (f" (+{len(reasons) - 3})" if len(reasons) > 3 else ""))
    for file in skipped:
        warn(f"  not written {file}: changed since the verification started")
    return EXIT_REGRESSION if held or skipped else EXIT_CLEAN
