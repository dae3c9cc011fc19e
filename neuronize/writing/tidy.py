"""The finishing passes: the code the fixes wrote, made what a person would write."""

from __future__ import annotations

import libcst as cst

from neuronize.types import Options, Target
from neuronize.writing.device_name import name_device
from neuronize.writing.guards_merged import merge_guards
from neuronize.writing.late_defaults import late_defaults
from neuronize.writing.neuron_test import name_neuron_test
from neuronize.writing.wrapped import added_long_line, limit_for, wrap_long_lines


def finished(module: cst.Module, new: cst.Module, code: str | None, source: bytes, options: Options,
             tidy: bool, inherited: cst.Module | None = None) -> tuple[cst.Module, str | None]:
    """``new`` (``module`` with the fixes applied, ``code`` its code if already rendered, else
    None) finished, with its code when rendered: under ``--target accelerator`` the detected
    device named once per scope (:mod:`neuronize.writing.device_name`) and the guards it leaves
    alike merged (:mod:`neuronize.writing.guards_merged`); then, with ``tidy`` and when the fixes
    changed something, :func:`tidied` (``inherited``: what a notebook's earlier cells ran)."""
    if options.target is Target.ACCELERATOR:
        named = merge_guards(name_device(new, source), source)
        if named is not new:
            new, code = named, None
    if tidy and new is not module:
        return tidied(new, source, options, code, inherited)
    return new, code


def tidied(new: cst.Module, source: bytes, options: Options, code: str | None = None,
           inherited: cst.Module | None = None) -> tuple[cst.Module, str | None]:
    """Defaults resolved in the body (:mod:`neuronize.writing.late_defaults`), the Neuron test
    defined once (:mod:`neuronize.writing.neuron_test`; a notebook cell calls the one an earlier
    cell defined, in ``inherited``), lines within the project's length
    (:mod:`neuronize.writing.wrapped`); with the result's code when rendered.
    ``code``: ``new``'s code when already rendered (a module whose code spells no test out needs
    no walk for one).

    The code is rendered once, to find whether any line the run wrote is too long at all: the
    statement-by-statement measure of :func:`wrap_long_lines` costs more than the whole render,
    and most rewrites leave no line to split."""
    tidied = late_defaults(new, source)
    if code is None or tidied is not new or "current_accelerator" in code:
        tidied = name_neuron_test(tidied, source, inherited, options.python2)
    if tidied is not new or code is None:
        code = tidied.code
    limit = limit_for(source, options.line_length)
    if not added_long_line(code, source, tidied.encoding, limit):
        return tidied, code
    wrapped = wrap_long_lines(tidied, source, limit)
    return wrapped, code if wrapped is tidied else None
