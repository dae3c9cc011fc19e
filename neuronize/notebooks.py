"""Analysing a Jupyter notebook: each code cell through the engine, the JSON rewritten (cells only)
when a cell changed. Pure, like the engine: bytes in, values out."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from neuronize.engine import TokenFilter, run_source
from neuronize.sources.notebook import NotebookError, read_cells, write_cells
from neuronize.transform import Transform
from neuronize.types import FileError, Finding, Options, SourceResult


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
    findings: list[Finding] = []
    changed: dict[int, bytes] = {}
    errors: list[str] = []
    would_change = False
    for cell in cells:
        result = run_source(cell.source, rules, options, path=f"{path}:cell {cell.index}",
                            prefilter=prefilter, fix=fix)
        findings.extend(dataclasses.replace(f, cell=cell.index) for f in result.findings)
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
    ordered = tuple(sorted(findings, key=lambda f: (f.cell or 0, f.line, f.column, f.rule)))
    if output is not None and error is None:
        return SourceResult(findings=ordered, output=output)
    return SourceResult(findings=ordered, output=output if error is None else None, error=error,
                        would_change=would_change)


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
