"""The one entry point for a file of any kind: Python to :func:`neuronize.analysis.engine.run_source`,
notebooks to :func:`neuronize.analysis.notebooks.run_notebook` (cell by cell, through the same
engine), every other kind to :func:`neuronize.analysis.line_files.run_text`."""

from __future__ import annotations

from collections.abc import Sequence

from neuronize.analysis.engine import run_source
from neuronize.analysis.line_files import run_text
from neuronize.analysis.prefilter import TokenFilter, prefilter_for
from neuronize.sources.kinds import SourceKind
from neuronize.transform import Transform
from neuronize.types import Options, SourceResult


def run_kind(source: bytes, kind: SourceKind, rules: Sequence[type[Transform]], options: Options = Options(),
             path: str = "<string>", prefilter: TokenFilter | None = None, fix: bool = True) -> SourceResult:
    """Analyse (and fix) one file of any kind with the rules that read that kind."""
    chosen = [r for r in rules if kind in r.kinds]
    if kind is SourceKind.PYTHON:
        return run_source(source, chosen, options, path=path, prefilter=prefilter, fix=fix)
    if kind is SourceKind.NOTEBOOK:
        # imported here: the notebook reader costs its import (~8 ms) only to runs that meet a notebook
        from neuronize.analysis.notebooks import run_notebook

        return run_notebook(source, chosen, options, path, prefilter or prefilter_for(chosen, kind), fix=fix)
    return run_text(source, kind, chosen, options, path, prefilter, fix)
