"""Analysing a Jupyter notebook: each code cell through the engine, the JSON rewritten (cells only)
when a cell changed. Pure, like the engine: bytes in, values out."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import ast
import warnings

from neuronize.decision.claims import is_claimer
from neuronize.decision.policy import accepts
from neuronize.analysis.engine import not_rewritten, run_source
from neuronize.analysis.import_safety import NEURON_TEST_NAME
from neuronize.analysis.prefilter import TokenFilter
from neuronize.analysis.notebook_magics import gpu_magics
from neuronize.sources.notebook import Cell, NotebookError, read_cells, write_cells
from neuronize.transform import Transform
from neuronize.types import FileError, Finding, Options, Safety, SourceResult


def _tree(source: bytes) -> ast.Module | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def _imports(tree: ast.Module) -> list[tuple[str, str]]:
    """(bound name, import statement) of each top-level import of a cell."""
    found = []
    for stmt in tree.body:
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                spelled = f"import {alias.name}" + (f" as {alias.asname}" if alias.asname else "")
                found.append((alias.asname or alias.name.split(".")[0], spelled))
        elif isinstance(stmt, ast.ImportFrom) and not stmt.level and stmt.module:
            for alias in stmt.names:
                if alias.name != "*":
                    spelled = f"from {stmt.module} import {alias.name}" + (f" as {alias.asname}" if alias.asname else "")
                    found.append((alias.asname or alias.name, spelled))
    return found


def _named_assignments(tree: ast.Module) -> Iterator[tuple[str, ast.Assign]]:
    """A cell's top-level ``name = value`` statements, with the name."""
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            yield stmt.targets[0].id, stmt


def _device_choices(tree: ast.Module, source: str) -> dict[str, str]:
    """name -> statement, for a cell's top-level ``name = <a choice asking is_available() for "cuda">``
    (the engine decides whether it is the program's device variable: ``device_variable``)."""
    found = {}
    for name, stmt in _named_assignments(tree):
        parts = list(ast.walk(stmt.value))
        asks = any(isinstance(n, ast.Attribute) and n.attr == "is_available" for n in parts)
        names_cuda = any(isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.startswith("cuda")
                         for n in parts)
        text = ast.get_source_segment(source, stmt) if asks and names_cuda else None
        if text is not None:
            found[name] = text
    return found


def _rebound(tree: ast.Module) -> set[str]:
    """Every name a cell may bind, in any scope (a later cell that rebinds a device variable, even in
    a function through ``global``, ends what earlier cells chose)."""
    names = {name for name, _ in _imports(tree)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names.update(node.names)
    return names


def _trees(cells: Sequence[Cell]) -> list[ast.Module | None]:
    """Each cell's syntax tree, read once for the notebook's pre-passes; None for a cell that does
    not parse or that writes a file (its code runs in a process of its own)."""
    return [None if cell.script else _tree(cell.source) for cell in cells]


def inherited_statements(cells: Sequence[Cell], trees: Sequence[ast.Module | None],
                         flags: Sequence[NotebookFlag] = ()) -> list[bytes]:
    """For each cell, the statements of earlier cells it relies on (a notebook runs its cells in one
    namespace, until the kernel restarts: `torch` imported in cell 2 is `torch` in cell 4): the imports it uses without importing
    them itself (only names the cell mentions, so no rule can pick a spelling the cell never used;
    and a plain ``import torch``), and the device variable an earlier cell chose, or a CUDA flag of
    ``flags`` it stored, with the imports that statement reads."""
    earlier: dict[str, str] = {}
    choices: dict[str, str] = {}
    stored: dict[int, list[NotebookFlag]] = {}
    for flag in flags:
        stored.setdefault(flag.cell, []).append(flag)
    out = []
    for position, (cell, tree) in enumerate(zip(cells, trees, strict=True)):
        if cell.restarts:  # a fresh kernel: nothing an earlier cell bound is there
            earlier.clear()
            choices.clear()
        if tree is None:  # a file the cell writes runs in a process of its own
            out.append(b"")
            continue
        own = _imports(tree)
        bound = {name for name, _ in own}
        used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
        for statement in choices.values():
            used |= {node.id for node in ast.walk(ast.parse(statement)) if isinstance(node, ast.Name)}
        # `import torch` as such: the name the rules write, so a cell that never mentions torch
        # calls the one an earlier cell imported instead of importing it again
        lines = [stmt for name, stmt in earlier.items()
                 if (name in used or stmt == "import torch") and name not in bound]
        lines += choices.values()
        out.append("".join(f"{line}\n" for line in lines).encode())
        earlier.update(own)
        for name in _rebound(tree):
            choices.pop(name, None)
        choices.update(_device_choices(tree, cell.source.decode("utf-8", "replace")))
        choices.update((flag.name, flag.statement) for flag in stored.get(position, ()))
    return out


def _cuda_flags(tree: ast.Module) -> set[str]:
    """The names a cell stores at its top level from a CUDA check (``train_on_gpu =
    torch.cuda.is_available()``, ``use_cuda = args.cuda and torch.cuda.device_count() > 0``)."""
    return {name for name, stmt in _named_assignments(tree)
            if any(isinstance(n, ast.Attribute) and n.attr in ("is_available", "device_count")
                   and isinstance(n.value, ast.Attribute) and n.value.attr == "cuda" for n in ast.walk(stmt.value))}


@dataclass(frozen=True)
class NotebookFlag:
    """A CUDA flag one cell stores and later cells read: one choice, which no one cell sees whole."""

    name: str
    cell: int  # the position of the cell that stores it
    statement: str  # the line that stores it, which the cells reading it inherit
    #: (position of the cell, line, 1-based column) of every ``if``/``elif`` and conditional
    #: expression testing the flag, in any cell: each gains a Neuron branch, or none does
    tests: tuple[tuple[int, int, int], ...]
    #: every other read of the flag only shows it (a print, an f-string): the tests are the whole choice
    tests_only: bool


def shared_flags(cells: Sequence[Cell], trees: Sequence[ast.Module | None]) -> list[NotebookFlag]:
    """The CUDA flags a cell stores that a later cell reads (until a restart, or a cell that binds
    the name again)."""
    shared = []
    for i, tree in enumerate(trees):
        for name in sorted(_cuda_flags(tree)) if tree is not None else ():
            flag = _shared_flag(cells, trees, i, name)
            if flag is not None:
                shared.append(flag)
    return shared


def _shared_flag(cells: Sequence[Cell], trees: Sequence[ast.Module | None], i: int, name: str) -> NotebookFlag | None:
    """The flag ``name`` cell ``i`` stores, if a later cell reads it."""
    tree = trees[i]
    assert tree is not None
    stores = sum(isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load) for n in ast.walk(tree))
    tests_only = stores == 1 and name not in _globals(tree)
    readers = [(i, tree)]  # the cells where the stored value stands
    for position in range(i + 1, len(cells)):
        later = trees[position]
        if cells[position].restarts:
            break
        if later is not None:
            readers.append((position, later))
            if name in _rebound(later):
                tests_only = False
                break
    tests: list[tuple[int, int, int]] = []
    read_later = False
    for position, reader in readers:
        for node, test in _reads(reader, name):
            read_later = read_later or position != i
            if test:
                tests.append((position, node.lineno, node.col_offset + 1))
            elif not _shows(reader, node):
                tests_only = False
    if not read_later:
        return None
    statement = next(stmt for n, stmt in _named_assignments(tree) if n == name)
    text = ast.get_source_segment(cells[i].source.decode("utf-8", "replace"), statement) or ""
    return NotebookFlag(name, i, text, tuple(tests), tests_only and bool(text))


def _globals(tree: ast.Module) -> set[str]:
    return {name for node in ast.walk(tree) if isinstance(node, (ast.Global, ast.Nonlocal)) for name in node.names}


def _reads(tree: ast.Module, name: str) -> Iterator[tuple[ast.stmt | ast.expr, bool]]:
    """Each read of ``name`` in ``tree``: the ``if``/``elif``/conditional expression it is the whole
    test of (True), or the name itself (False)."""
    tested = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.If, ast.IfExp)) and isinstance(node.test, ast.Name) and node.test.id == name:
            tested.add(id(node.test))
            yield node, True
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load) and id(node) not in tested:
            yield node, False


def _shows(tree: ast.Module, name: ast.AST) -> bool:
    """``name`` is only shown: an argument of ``print`` or a field of an f-string."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FormattedValue) and node.value is name:
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print" \
                and any(arg is name for arg in node.args):
            return True
    return False


def _unserved(flags: Sequence[NotebookFlag], results: Sequence[SourceResult], accepted: Callable[[Any], bool]
              ) -> frozenset[str]:
    """The flags of which some test did not gain its Neuron branch in ``results`` (no fix applied
    where it stands): the others would place what that test keeps on the CPU."""
    fixed = {(i, f.line, f.column) for i, result in enumerate(results) for f in result.findings if accepted(f)}
    return frozenset(flag.name for flag in flags if not set(flag.tests) <= fixed)


def neuron_helper(code: bytes) -> bytes:
    """The definition of the Neuron test (``def on_neuron() -> bool: ...``, as
    :mod:`neuronize.writing.neuron_test` writes it) at the top level of a cell's code, if any."""
    tree = _tree(code) if b"def " in code else None
    for stmt in tree.body if tree is not None else ():
        if isinstance(stmt, ast.FunctionDef) and NEURON_TEST_NAME.fullmatch(stmt.name):
            text = ast.get_source_segment(code.decode("utf-8", "replace"), stmt)
            return f"{text}\n".encode() if text else b""
    return b""


def magic_findings(cell: Cell, rules: Sequence[type[Transform]]) -> list[Finding]:
    """Findings for the GPU-specific IPython lines of a cell, under enabled rules only."""
    by_id = {rule.id: rule for rule in rules if not is_claimer(rule)}
    found = []
    for line, rule_id, message in gpu_magics(cell.magics):
        rule = by_id.get(rule_id)
        if rule is not None:
            found.append(Finding(line, 1, rule.id, rule.name, Safety.REPORT_ONLY, message, False, cell=cell.index))
    return found


def run_notebook(source: bytes, rules: Sequence[type[Transform]], options: Options, path: str,
                 prefilter: TokenFilter, fix: bool = True) -> SourceResult:
    """Each code cell is a module of its own; findings name their cell; the JSON is rewritten
    (cells only) when a cell changed."""
    if not prefilter.search(source):
        return SourceResult(skipped=True)
    try:
        cells = read_cells(source)
    except NotebookError as exc:
        return SourceResult(error=FileError(f"invalid notebook: {exc.message}", exc.line))
    # a notebook is a program of its own: its cells serve the hosts its own cells check for
    options = dataclasses.replace(options, project_checks_host=False)
    trees = _trees(cells)
    flags = shared_flags(cells, trees)
    kept = frozenset(flag.name for flag in flags if not flag.tests_only)
    results = _run_cells(cells, trees, flags, kept, rules, options, path, prefilter, fix)
    # every test of a flag gains its Neuron branch, or the flag stays CUDA's in every cell; a
    # placement pinned to CUDA in one cell holds the device edits of all
    for _ in range(2):
        unserved = kept | _unserved([flag for flag in flags if flag.name not in kept], results, accepts(options))
        pins = options.notebook_pins or next((result.pins for result in results if result.pins is not None), None)
        if unserved == kept and pins == options.notebook_pins:
            break
        kept, options = unserved, dataclasses.replace(options, notebook_pins=pins)
        results = _run_cells(cells, trees, flags, kept, rules, options, path, prefilter, fix)
    findings: list[Finding] = []
    changed: dict[int, bytes] = {}
    errors: list[str] = []
    would_change = False
    for cell, result in zip(cells, results, strict=True):
        findings.extend(dataclasses.replace(f, cell=cell.index) for f in result.findings)
        findings.extend(magic_findings(cell, rules))
        would_change = would_change or result.would_change
        if result.error is not None:
            where = f"cell {cell.index}" + (f", line {result.error.line}" if result.error.line else "")
            errors.append(f"{where}: {result.error.message}")
        elif result.output is not None:
            changed[cell.index] = result.output
    error = FileError("; ".join(errors)) if errors else None
    output = None
    if changed:
        try:
            output = write_cells(source, changed)
        except NotebookError as exc:
            return SourceResult(findings=tuple(findings), error=FileError(f"notebook not rewritten: {exc.message}"))
    if error is not None:
        findings = list(not_rewritten(findings, "the notebook is not rewritten while a cell cannot be read (see its "
                                                "error line)"))
    ordered = tuple(sorted(findings, key=lambda f: (f.cell or 0, f.line, f.column, f.rule)))
    if output is not None and error is None:
        return SourceResult(findings=ordered, output=output)
    return SourceResult(findings=ordered, output=output if error is None else None, error=error,
                        would_change=would_change and error is None)


def _run_cells(cells: Sequence[Cell], trees: Sequence[ast.Module | None], flags: Sequence[NotebookFlag],
               kept: frozenset[str], rules: Sequence[type[Transform]], options: Options, path: str,
               prefilter: TokenFilter, fix: bool) -> list[SourceResult]:
    """Each cell run as a module of its own, knowing what the cells above it bound: the flags of
    ``kept`` stay CUDA's, the others are passed on to the cells that test them."""
    results = []
    helper = b""  # the Neuron test an earlier cell defines, which later cells call
    passed = [flag for flag in flags if flag.name not in kept]
    for position, (cell, inherited) in enumerate(zip(cells, inherited_statements(cells, trees, passed), strict=True)):
        helper = b"" if cell.restarts else helper
        own = frozenset(flag.name for flag in flags if flag.cell == position and flag.name in kept)
        here = dataclasses.replace(options, notebook_flags=own) if own else options
        result = run_source(cell.source, rules, here, path=f"{path}:cell {cell.index}",
                            prefilter=prefilter, fix=fix, inherited=b"" if cell.script else inherited + helper)
        helper = helper or (b"" if cell.script else neuron_helper(result.output or cell.source))
        results.append(result)
    return results


def findings_by_cell(source: bytes, findings: Sequence[Finding]) -> list[tuple[bytes, list[Finding]]]:
    """(cell source, its findings) for each cell of a notebook with findings: the text a
    finding's line refers to. Empty if the notebook cannot be read."""
    try:
        cells = read_cells(source)
    except NotebookError:
        return []
    groups = []
    for cell in cells:
        found = [f for f in findings if f.cell == cell.index]
        if found:
            groups.append((cell.source, found))
    return groups
