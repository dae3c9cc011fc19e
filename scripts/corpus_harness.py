#!/usr/bin/env python
"""Run neuronize over real repositories and check its guarantees on each of them.

Usage::

    python scripts/corpus_harness.py CORPUS_DIR [--diffs OUT_DIR] [--only NAME] [--python PYTHON]

CORPUS_DIR holds one checkout per sub-directory (e.g. ``/tmp/corpus/karpathy+nanoGPT``). The
repositories are public code fetched by you and kept outside this project; they are never
modified: each one is copied to a temporary directory, and on the copy the harness runs

1. ``python -m neuronize check --unsafe-fixes --output-format json .`` (findings),
2. ``python -m neuronize fix --diff --unsafe-fixes --output-format json .`` (which findings the
   edits come from: ``check`` applies nothing, so only here is ``applied`` set),
3. ``python -m neuronize fix --unsafe-fixes --output-format json .``,
4. the same ``fix`` a second time,

then prints one Markdown table row per repository:

- **commit**: ``git rev-parse HEAD`` of the original checkout (``-`` if it is not one);
- **scanned / changed / failed**: files neuronize looked at, files whose bytes changed, files it
  reported as errors;
- **crashes**: a traceback on stderr, an exit code other than 0/1/2, an exit code 2 with no
  reported error, or an error that says "internal error";
- **unparseable**: a changed file that ``ast.parse`` (this interpreter) rejects although the
  original parsed;
- **second run**: files the second ``fix`` changes again;
- **unexplained**: changed files for which ``fix --diff`` reported no applied finding;
- **no token**: modified files that contain none of the pre-filter tokens (must be zero);
- **stray**: files other than the changed sources (``*.py``, notebooks, and the other kinds of
  source: requirements, pyproject, shell, Dockerfile, YAML/JSON configs) that were created,
  modified or deleted (temporary files left behind, writes to other files);
- **other kinds**: files of the kinds other than Python and notebooks that neuronize read, by kind
  (``req``, ``pyp``, ``sh``, ``dock``, ``yaml``, ``json``), and how many of them changed;
- **lossy**: files of those kinds whose lines do not join back to the same bytes (must be zero);
- **too long**: lines the migration added to a Python file that run past the project's line length
  (its ruff / black / flake8 setting, else the file's longest line, at least 88); an f-string and a
  line carrying the author's comment are the author's (must be zero);
- **test twice**: Python files that spell the test "the accelerator is Neuron" out more than once
  (a module defines it once, ``on_neuron()``; must be zero);
- **imports**: changed Python files that no longer import on this CPU host, of those checked
  (``failed / checked``; failed must be zero). A changed file is checked when its original
  imports: in a subprocess of ``--python`` (or ``--import-python``, an interpreter that also has
  the corpus's dependencies), cwd and ``PYTHONPATH`` the root of a pristine copy, within 20 s. A
  file in a package is imported by its dotted name, any other as a script sees itself (its
  directory first on ``sys.path``) under a name other than ``"__main__"``, so a main block does
  not run. An original that fails or times out (a script that trains at import, a dependency not
  installed) is not checked. The migrated file is imported the same way after the second ``fix``
  (a timeout tried once more with 40 s);
  only changed files are imported (a few seconds each);
- **CUDA left, no finding**: CUDA-specific code still in the migrated copy on a line that no
  finding of the second ``fix`` run covers (that run reports on the migrated files, so its lines
  are the output's): ``"cuda"`` / ``"cuda:N"`` device strings, ``torch.cuda`` references,
  ``.cuda()`` calls, ``"nccl"`` and imports of the CUDA-only packages of
  ``neuronize.analysis.cuda_packages`` (not of the project's own packages), but not the ``"cuda"``
  of the host-aware ``"neuron" if ... else "cuda"`` the migration writes, nor the CUDA code it keeps
  in the ``else`` of the Neuron (or accelerator) test it writes, under ``if not <Neuron>:`` or after
  ``<Neuron> or``. A cheap ``ast`` scan,
  not a rule: it names what a user who trusts the report would meet unannounced. ``--diffs``
  writes the sites to ``<repo>.left.txt`` and the ``check`` findings to ``<repo>.findings.json``.

Changed files are checked by kind: Python and notebooks parse, JSON configs load, shell scripts
pass ``bash -n`` (when the original did).

``--target`` runs every step with that target (default ``neuron``); ``--safe-only`` runs them
without ``--unsafe-fixes`` (what a default run applies). Every column from *crashes*
to *imports* must be zero; the exit code is 1 otherwise (0 when clean).
``--diffs`` writes one unified diff per repository for review (and ``<repo>.second-run.diff``
when a second run changes something). The result cache goes to a temporary directory
(``NEURONIZE_CACHE_DIR``) so that every run really analyses the files. Changed files are parsed
with this interpreter's ``ast``: run the harness with the Python the project targets.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from neuronize.analysis.prefilter import prefilter_for
from neuronize.analysis.import_safety import calls_neuron_test
from neuronize.analysis.project_packages import top_level_packages
from neuronize.registry import all_rules
from neuronize.sources.kinds import CODE_KINDS, SourceKind
from neuronize.sources.lines import join_lines, split_lines
from neuronize.sources.notebook import read_cells
from neuronize.analysis.syntax import module_matches
from neuronize.sources.line_length import line_length_for
from neuronize.analysis.cuda_packages import REPORTED
from neuronize.writing.wrapped import limit_for

INVARIANTS = ("crashes", "unparseable", "second_run", "unexplained", "no_token", "stray", "lossy", "too_long",
              "test_twice", "imports")
SHORT = {SourceKind.REQUIREMENTS: "req", SourceKind.PYPROJECT: "pyp", SourceKind.SHELL: "sh",
         SourceKind.DOCKERFILE: "dock", SourceKind.YAML_CONFIG: "yaml", SourceKind.JSON_CONFIG: "json",
         SourceKind.MAKEFILE: "make", SourceKind.SETUP_CFG: "cfg", SourceKind.CONDA: "conda"}
SOURCES = (".py", ".ipynb")

#: what the "CUDA left, no finding" column looks for: a device string, torch.cuda, .cuda(), "nccl",
#: an import of a CUDA-only package (the project's one table) or of a compiled `*_cuda` extension
LEFT_KINDS = ("device string", "torch.cuda", ".cuda()", "nccl", "CUDA-only import")
_DEVICE_STRING = re.compile(r"cuda(:\d+)?")


def _dotted(node: ast.expr) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


#: a test the migration writes for "Neuron (or an accelerator) is here", spelled out (the module's
#: function for it, ``on_neuron()``: :func:`calls_neuron_test`)
_NEURON_OR_ACCELERATOR = re.compile(r"type == ['\"]neuron['\"]|accelerator\.is_available\(\)")


def _is_neuron_test(node: ast.AST) -> bool:
    code = ast.unparse(node)
    return bool(_NEURON_OR_ACCELERATOR.search(code) or calls_neuron_test(code))


def _host_aware_fallbacks(tree: ast.Module) -> set[int]:
    """ids of the nodes the migration keeps for the other hosts: the ``"cuda"`` in ``"neuron" if
    <Neuron is present> else "cuda"``; the ``else`` of an ``if`` / conditional expression on the
    Neuron (or accelerator) test it writes (``else: torch.cuda.manual_seed(s)``), the body of an
    ``if not <Neuron>:`` and what follows ``<Neuron> or`` (``on_neuron() or
    torch.cuda.is_available()``): CUDA keeps its path there; that is no CUDA code left behind."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.IfExp) and isinstance(node.body, ast.Constant) and node.body.value == "neuron" \
                and isinstance(node.orelse, ast.Constant):
            found.add(id(node.orelse))
        kept: list[ast.AST] = []
        if isinstance(node, (ast.If, ast.IfExp)) and _is_neuron_test(node.test):
            negated = isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not)
            branch = node.body if negated else node.orelse
            kept = branch if isinstance(branch, list) else [branch]
        elif isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or) and _is_neuron_test(node.values[0]):
            kept = node.values[1:]
        found.update(id(n) for part in kept for n in ast.walk(part))
    return found


def cuda_sites(source: bytes, own: tuple[str, ...] = ()) -> list[tuple[int, str]]:
    """(line, kind) of each piece of CUDA-specific code in a Python source (nothing if it does not
    parse). ``torch`` under another name (``import torch as T``) and ``from torch import cuda``
    count; a ``torch.cuda.x.y`` chain counts once; imports of ``own`` (the project's own
    top-level packages) and the host-aware ``"neuron" if ... else "cuda"`` the migration writes
    do not."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    torch_names = {"torch"}
    cuda_names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            torch_names |= {a.asname for a in node.names if a.name == "torch" and a.asname}
        elif isinstance(node, ast.ImportFrom) and node.module == "torch" and not node.level:
            cuda_names |= {a.asname or a.name for a in node.names if a.name == "cuda"}
    sites: list[tuple[int, str]] = []
    inner = _host_aware_fallbacks(tree)  # and nodes inside a chain already counted (outer ones come first)
    for node in ast.walk(tree):
        kind = None
        if id(node) in inner:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if _DEVICE_STRING.fullmatch(node.value):
                kind = "device string"
            elif node.value == "nccl":
                kind = "nccl"
        elif isinstance(node, ast.Attribute):
            name = _dotted(node)
            head = name.split(".") if name else []
            if len(head) >= 2 and ((head[0] in torch_names and head[1] == "cuda") or head[0] in cuda_names):
                kind = "torch.cuda"
                value = node.value
                while isinstance(value, ast.Attribute):
                    inner.add(id(value))
                    value = value.value
                inner.add(id(value))
        elif isinstance(node, ast.Name) and node.id in cuda_names and isinstance(node.ctx, ast.Load):
            kind = "torch.cuda"
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "cuda":
            kind = ".cuda()"
        elif isinstance(node, (ast.Import, ast.ImportFrom)) and not getattr(node, "level", 0):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if any((module_matches(m, (*REPORTED, "triton")) or m.split(".")[0].endswith("_cuda"))
                   and m.split(".")[0] not in own for m in modules):
                kind = "CUDA-only import"
        if kind is not None:
            sites.append((node.lineno, kind))
    return sorted(sites)


def uncovered_sites(source: bytes, spans: list[tuple[int | None, int, int]],
                    notebook: bool = False, own: tuple[str, ...] = (),
                    mentioned: str = "") -> list[tuple[int | None, int, str]]:
    """(cell, line, kind) of the CUDA sites of a migrated source that no finding covers;
    ``spans`` are the findings' (cell, first line, last line). An import also counts as covered
    when a finding of the file names its package in ``mentioned`` (the findings' messages): one
    finding per dependency and file is the intent."""
    try:
        cells = [(c.index, c.source) for c in read_cells(source)] if notebook else [(None, source)]
    except ValueError:
        return []
    left = []
    for cell, text in cells:
        lines = text.decode("utf-8", "replace").splitlines()
        for line, kind in cuda_sites(text, own):
            if any(c == cell and first <= line <= last for c, first, last in spans):
                continue
            if kind == "CUDA-only import" and _package_mentioned(lines[line - 1], mentioned):
                continue
            left.append((cell, line, kind))
    return left


@dataclass
class Row:
    repo: str
    commit: str = "-"
    scanned: int = 0
    changed: int = 0
    failed: int = 0
    findings: int = 0
    applied: int = 0
    crashes: int = 0
    unparseable: int = 0
    second_run: int = 0
    unexplained: int = 0
    no_token: int = 0
    stray: int = 0
    lossy: int = 0
    too_long: int = 0
    test_twice: int = 0
    imports: int = 0
    imports_checked: int = 0
    #: files of the other kinds read, and changed, by short kind name
    other_kinds: dict[str, int] = field(default_factory=dict)
    other_changed: int = 0
    left: int = 0
    left_kinds: dict[str, int] = field(default_factory=dict)
    left_sites: list[str] = field(default_factory=list)
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)

    def bad(self) -> bool:
        return any(getattr(self, name) for name in INVARIANTS)


#: the test "the accelerator is Neuron" written out (a module defines it once: ``on_neuron()``)
NEURON_TEST_TEXT = re.compile(r"current_accelerator\(\)\.type == ['\"]neuron['\"]")


def long_added_lines(old: bytes, new: bytes, configured: int | None) -> list[str]:
    """Lines of ``new`` not in ``old`` longer than the file's limit (the project's line length,
    else its longest line, at least 88); an f-string (black never splits a string) and a line that
    carries the author's comment are the author's."""
    limit = limit_for(old, configured)
    before = set(old.decode("utf-8", "replace").splitlines())
    return [line for line in new.decode("utf-8", "replace").splitlines()
            if line not in before and len(line) > limit and not re.search(r"\bf['\"]", line) and " # " not in line]


def _commit(repo: Path) -> str:
    try:
        proc = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return "-"
    return proc.stdout.strip()[:12] if proc.returncode == 0 else "-"


def _snapshot(root: Path) -> dict[str, str]:
    """Relative path -> content hash of every regular file (symlinks: their target text)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                out[rel] = "link:" + os.readlink(path)
                continue
            try:
                out[rel] = hashlib.sha1(path.read_bytes()).hexdigest()
            except OSError:
                out[rel] = "unreadable"
    return out


def _json_in(text: str) -> dict:
    """The JSON report in ``text`` (alone on stdout, or among other lines on stderr)."""
    start = 0 if text.startswith("{") else text.find("\n{") + 1
    if text.startswith("{") or start > 0:
        try:
            payload, _ = json.JSONDecoder().raw_decode(text, start)
        except ValueError:
            return {}
        return payload if isinstance(payload, dict) else {}
    return {}


def _neuronize(python: str, cwd: Path, cache: Path, *args: str) -> tuple[int, dict, str]:
    """Run the real command line on ``.`` in ``cwd``; the JSON report, wherever it is printed."""
    env = {**os.environ, "NO_COLOR": "1", "NEURONIZE_CACHE_DIR": str(cache)}
    proc = subprocess.run([python, "-m", "neuronize", *args, "--output-format", "json", "."],
                          cwd=cwd, capture_output=True, env=env, timeout=3600)
    stderr = proc.stderr.decode("utf-8", "replace")
    # With --diff the diff owns stdout and the report goes to stderr.
    payload = _json_in(stderr if "--diff" in args else proc.stdout.decode("utf-8", "replace"))
    return proc.returncode, payload, stderr


def _crash_reasons(step: str, code: int, payload: dict, stderr: str) -> list[str]:
    reasons = []
    if "Traceback (most recent call last)" in stderr:
        tail = stderr.strip().splitlines()[-1] if stderr.strip() else ""
        reasons.append(f"{step}: traceback on stderr ({tail})")
    if code not in (0, 1, 2):
        reasons.append(f"{step}: exit code {code}")
    if not payload:
        reasons.append(f"{step}: stdout is not a JSON report")
    errors = payload.get("errors", [])
    if code == 2 and not errors:
        reasons.append(f"{step}: exit code 2 without a reported error")
    for err in errors:
        if "internal error" in err.get("message", ""):
            reasons.append(f"{step}: {err['path']}: {err['message']}")
    return reasons


def _kinds_of(root: Path) -> dict[str, SourceKind]:
    """Relative path -> kind of every file a run over ``root`` could read (as discovery does)."""
    from neuronize.sources.discover import discover

    found, _ = discover([str(root)])
    return {f.path.relative_to(root).as_posix(): f.kind for f in found}


def _valid(data: bytes, kind: SourceKind) -> bool:
    """Python parses, a notebook's cells parse, a JSON config loads, a shell script passes
    ``bash -n``; the other kinds are lines, always valid."""
    if kind in CODE_KINDS:
        return _parses(data, kind is SourceKind.NOTEBOOK)
    if kind is SourceKind.JSON_CONFIG:
        try:
            json.loads(data)
        except ValueError:
            return False
    if kind is SourceKind.SHELL and shutil.which("bash"):
        return subprocess.run(["bash", "-n"], input=data, capture_output=True).returncode == 0
    return True


def _lossless(data: bytes) -> bool:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return True  # not read: an error for that file, not a lossy one
    return join_lines(split_lines(text)) == text


def _parses(data: bytes, notebook: bool = False) -> bool:
    """``ast.parse`` accepts it (a notebook: every Python code cell, magics masked)."""
    try:
        if notebook:
            sources = [cell.source for cell in read_cells(data)]
        else:
            sources = [data]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for source in sources:
                ast.parse(source)
    except (SyntaxError, ValueError):  # NotebookError is a ValueError
        return False
    return True


def run_repo(repo: Path, python: str, diffs: Path | None, target: str = "neuron", unsafe: bool = True,
             import_python: str | None = None) -> Row:
    row = Row(repo=repo.name, commit=_commit(repo))
    fixes = ["--unsafe-fixes"] if unsafe else []
    rules = all_rules()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="neuronize-corpus-") as tmp:
        work = Path(tmp) / repo.name
        shutil.copytree(repo, work, symlinks=True, ignore=shutil.ignore_patterns(".git"))
        pristine = Path(tmp) / "original" / repo.name  # imported from, as the migrated copy is
        shutil.copytree(work, pristine, symlinks=True)
        cache = Path(tmp) / "cache"
        before = _snapshot(work)
        kinds = _kinds_of(work)
        for rel, kind in kinds.items():
            if kind not in CODE_KINDS:
                row.other_kinds[SHORT[kind]] = row.other_kinds.get(SHORT[kind], 0) + 1
                if not _lossless((work / rel).read_bytes()):
                    row.lossy += 1
                    row.problems.append(f"lossy lines: {rel}")

        code, check, stderr = _neuronize(python, work, cache, "check", *fixes, "--target", target)
        row.problems += _crash_reasons("check", code, check, stderr)
        if diffs is not None:
            diffs.mkdir(parents=True, exist_ok=True)
            (diffs / f"{repo.name}.findings.json").write_text(json.dumps(check, indent=1), encoding="utf-8")
        row.findings = len(check.get("findings", []))
        # `check` applies nothing; `fix --diff` says which findings the edits come from.
        code, planned, stderr = _neuronize(python, work, cache, "fix", "--diff", *fixes, "--target", target)
        row.problems += _crash_reasons("fix --diff", code, planned, stderr)
        applied_paths = {f["path"] for f in planned.get("findings", []) if f.get("applied")}
        row.applied = sum(1 for f in planned.get("findings", []) if f.get("applied"))

        code, fixed, stderr = _neuronize(python, work, cache, "fix", *fixes, "--target", target)
        row.problems += _crash_reasons("fix", code, fixed, stderr)
        summary = fixed.get("summary", {})
        row.scanned = int(summary.get("files", 0))
        row.failed = len(fixed.get("errors", []))
        after = _snapshot(work)

        diff_chunks: list[str] = []
        for rel in sorted(set(before) | set(after)):
            if before.get(rel) == after.get(rel):
                continue
            if rel not in before or rel not in after or rel not in kinds:
                row.stray += 1
                row.problems.append(f"stray: {rel} ({'created' if rel not in before else 'deleted' if rel not in after else 'modified'})")
                continue
            row.changed += 1
            old = (repo / rel).read_bytes()
            new = (work / rel).read_bytes()
            kind = kinds[rel]
            row.other_changed += kind not in CODE_KINDS
            if _valid(old, kind) and not _valid(new, kind):
                row.unparseable += 1
                row.problems.append(f"unparseable: {rel}")
            if rel not in applied_paths:
                row.unexplained += 1
                row.problems.append(f"unexplained change: {rel}")
            if not prefilter_for(rules, kind).search(old):
                row.no_token += 1
                row.problems.append(f"modified without a pre-filter token: {rel}")
            if kind is SourceKind.PYTHON:
                for line in long_added_lines(old, new, line_length_for(str((repo / rel).parent.resolve()))):
                    row.too_long += 1
                    row.problems.append(f"added line over the line length: {rel}: {line.strip()[:80]}")
                written = NEURON_TEST_TEXT.findall(new.decode("utf-8", "replace"))
                if len(written) - len(NEURON_TEST_TEXT.findall(old.decode("utf-8", "replace"))) > 1:
                    row.test_twice += 1
                    row.problems.append(f"the Neuron test spelled out more than once: {rel}")
            if diffs is not None:
                diff_chunks.extend(difflib.unified_diff(
                    old.decode("utf-8", "replace").splitlines(keepends=True),
                    new.decode("utf-8", "replace").splitlines(keepends=True),
                    f"a/{rel}", f"b/{rel}"))

        once = {rel: (work / rel).read_bytes() for rel in applied_paths if (work / rel).is_file()}
        code, again, stderr = _neuronize(python, work, cache, "fix", *fixes, "--target", target)
        row.problems += _crash_reasons("second fix", code, again, stderr)
        third = _snapshot(work)
        second_chunks: list[str] = []
        for rel in sorted(set(after) | set(third)):
            if after.get(rel) != third.get(rel):
                row.second_run += 1
                row.problems.append(f"second run changed: {rel}")
                if diffs is not None and rel in once and (work / rel).is_file():
                    second_chunks.extend(difflib.unified_diff(
                        once[rel].decode("utf-8", "replace").splitlines(keepends=True),
                        (work / rel).read_bytes().decode("utf-8", "replace").splitlines(keepends=True),
                        f"a/{rel}", f"b/{rel}"))
        _count_left(row, work, again)
        _check_imports(row, import_python or python, pristine, work,
                       [rel for rel in sorted(after) if before.get(rel) != after.get(rel) and rel.endswith(".py")
                        and kinds.get(rel) is SourceKind.PYTHON])
        row.crashes = sum(1 for p in row.problems if p.split(":")[0] in ("check", "fix --diff", "fix", "second fix"))
        if diffs is not None:
            diffs.mkdir(parents=True, exist_ok=True)
            (diffs / f"{repo.name}.diff").write_text("".join(diff_chunks), encoding="utf-8")
            (diffs / f"{repo.name}.left.txt").write_text("".join(f"{site}\n" for site in row.left_sites),
                                                         encoding="utf-8")
            if second_chunks:
                (diffs / f"{repo.name}.second-run.diff").write_text("".join(second_chunks), encoding="utf-8")
    row.seconds = time.monotonic() - started
    return row


#: imports a file as its project would: by its dotted name in a package, else as a script (its
#: directory first on sys.path), under a name that is not "__main__"
_IMPORT_PROBE = """
import importlib, importlib.util, os, sys
path = os.path.abspath(sys.argv[1])
top = os.path.dirname(path)
while os.path.isfile(os.path.join(top, "__init__.py")):
    top = os.path.dirname(top)
if top != os.path.dirname(path):
    sys.path.insert(0, top)
    dotted = os.path.relpath(path, top)[:-3].replace(os.sep, ".")
    importlib.import_module(dotted[:-len(".__init__")] if dotted.endswith(".__init__") else dotted)
else:
    sys.path.insert(0, os.path.dirname(path))
    spec = importlib.util.spec_from_file_location("neuronize_import_probe", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
"""
IMPORT_TIMEOUT = 20


def _imports(python: str, root: Path, rel: str, timeout: float = IMPORT_TIMEOUT) -> tuple[bool | None, str]:
    """Whether ``rel`` imports under ``root`` (None: it timed out), and the last line of stderr."""
    env = {**os.environ, "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1", "NO_COLOR": "1"}
    try:
        proc = subprocess.run([python, "-c", _IMPORT_PROBE, rel], cwd=root, env=env, capture_output=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return None, f"timed out ({timeout:.0f} s)"
    lines = proc.stderr.decode("utf-8", "replace").strip().splitlines()
    return proc.returncode == 0, lines[-1] if lines else ""


def _check_imports(row: Row, python: str, pristine: Path, work: Path, changed: list[str]) -> None:
    """The "imports" column: each changed Python file whose original imports must still import."""
    for rel in changed:
        if not _imports(python, pristine, rel)[0]:
            continue
        row.imports_checked += 1
        ok, why = _imports(python, work, rel)
        if ok is None:  # a loaded machine, or a real hang: once more, with twice the time
            ok, why = _imports(python, work, rel, 2 * IMPORT_TIMEOUT)
        if not ok:
            row.imports += 1
            row.problems.append(f"no longer imports: {rel}: {why}")


def _package_mentioned(line: str, mentioned: str) -> bool:
    """Whether the top-level module of the import on ``line`` is named (in backticks) in ``mentioned``."""
    found = re.match(r"\s*(?:from|import)\s+(\w+)", line)
    return bool(found) and re.search(rf"`[^`\n]*\b{found.group(1)}\b[^`\n]*`", mentioned) is not None


def _count_left(row: Row, work: Path, report: dict) -> None:
    """The "CUDA left, no finding" column: ``report`` is a ``fix`` run's JSON on the migrated copy."""
    spans: dict[str, list[tuple[int | None, int, int]]] = {}
    messages: dict[str, str] = {}
    for f in report.get("findings", []):
        spans.setdefault(f["path"], []).append((f.get("cell"), f["line"], max(f["line"], f.get("end_line") or 0)))
        messages[f["path"]] = messages.get(f["path"], "") + f["message"] + "\n"
    paths = [p for p in sorted(work.rglob("*")) if p.suffix in SOURCES and p.is_file() and not p.is_symlink()]
    own = top_level_packages(p.relative_to(work).as_posix() for p in paths)
    for path in paths:
        rel = path.relative_to(work).as_posix()
        for cell, line, kind in uncovered_sites(path.read_bytes(), spans.get(rel, []), rel.endswith(".ipynb"), own,
                                                messages.get(rel, "")):
            row.left += 1
            row.left_kinds[kind] = row.left_kinds.get(kind, 0) + 1
            where = f"{rel}:cell {cell}:{line}" if cell is not None else f"{rel}:{line}"
            text = _line_text(path, cell, line)
            row.left_sites.append(f"{where}: {kind}: {text}")


def _line_text(path: Path, cell: int | None, line: int) -> str:
    data = path.read_bytes()
    if cell is not None:
        data = next((c.source for c in read_cells(data) if c.index == cell), b"")
    lines = data.decode("utf-8", "replace").splitlines()
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


def table(rows: list[Row]) -> str:
    head = ("| repository | commit | scanned | changed | failed | findings | applied | crashes | "
            "unparseable | second run | unexplained | no token | stray | lossy | too long | test twice | imports | "
            "other kinds (changed) | "
            "CUDA left, no finding | seconds |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        lines.append(
            f"| {r.repo} | `{r.commit}` | {r.scanned} | {r.changed} | {r.failed} | {r.findings} | "
            f"{r.applied} | {r.crashes} | {r.unparseable} | {r.second_run} | {r.unexplained} | "
            f"{r.no_token} | {r.stray} | {r.lossy} | {r.too_long} | {r.test_twice} | "
            f"{r.imports} / {r.imports_checked} | {_other(r)} | {r.left} | "
            f"{r.seconds:.1f} |")
    total = Row(repo="**total**", commit="")
    for name in ("scanned", "changed", "failed", "findings", "applied", *INVARIANTS, "imports_checked", "other_changed",
                 "left", "seconds"):
        setattr(total, name, sum(getattr(r, name) for r in rows))
    for r in rows:
        for short, count in r.other_kinds.items():
            total.other_kinds[short] = total.other_kinds.get(short, 0) + count
    lines.append(
        f"| {total.repo} | | {total.scanned} | {total.changed} | {total.failed} | {total.findings} | "
        f"{total.applied} | {total.crashes} | {total.unparseable} | {total.second_run} | "
        f"{total.unexplained} | {total.no_token} | {total.stray} | {total.lossy} | {total.too_long} | "
        f"{total.test_twice} | {total.imports} / {total.imports_checked} | {_other(total)} | {total.left} | "
        f"{total.seconds:.1f} |")
    return "\n".join(lines)


def _other(row: Row) -> str:
    kinds = " ".join(f"{k} {v}" for k, v in sorted(row.other_kinds.items()))
    return f"{kinds or '-'} ({row.other_changed})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", type=Path, help="directory with one repository per sub-directory")
    parser.add_argument("--only", action="append", default=[], help="run only these repositories")
    parser.add_argument("--diffs", type=Path, help="write one unified diff per repository here")
    parser.add_argument("--python", default=sys.executable, help="interpreter that runs neuronize")
    parser.add_argument("--target", default="neuron", choices=("neuron", "accelerator", "cpu"),
                        help="the --target every run uses")
    parser.add_argument("--import-python", help="interpreter the imports column uses (default: --python); "
                        "one that also has the corpus's dependencies checks more files")
    parser.add_argument("--safe-only", action="store_true",
                        help="run without --unsafe-fixes (the fixes a default run applies)")
    args = parser.parse_args(argv)

    repos = sorted(p for p in args.corpus.iterdir() if p.is_dir() and not p.name.startswith("."))
    if args.only:
        repos = [p for p in repos if p.name in args.only]
    if not repos:
        print(f"no repositories under {args.corpus}", file=sys.stderr)
        return 2
    rows = []
    for repo in repos:
        print(f"running {repo.name} ...", file=sys.stderr, flush=True)
        row = run_repo(repo, args.python, args.diffs, args.target, unsafe=not args.safe_only,
                       import_python=args.import_python)
        for problem in row.problems:
            print(f"  {repo.name}: {problem}", file=sys.stderr)
        if row.left:
            kinds = ", ".join(f"{k}: {row.left_kinds[k]}" for k in LEFT_KINDS if k in row.left_kinds)
            print(f"  {repo.name}: CUDA left with no finding: {row.left} ({kinds})", file=sys.stderr)
        rows.append(row)
    print(table(rows))
    return 1 if any(r.bad() for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
