"""The finishing passes: the code the fixes wrote, made what a person would write."""

from __future__ import annotations

import libcst as cst

from neuronize.types import Options, Target
from neuronize.writing.device_name import name_device
from neuronize.writing.guards_merged import merge_guards
from neuronize.writing.late_defaults import late_defaults
from neuronize.writing.neuron_test import name_neuron_test
from neuronize.writing.wrapped import limit_for, wrap_long_lines


def finished(module: cst.Module, new: cst.Module, source: bytes, options: Options, tidy: bool,
             name_tests: bool) -> cst.Module:
    """``new`` (``module`` with the fixes applied) finished: under ``--target accelerator`` the
    detected device named once per scope (:mod:`neuronize.writing.device_name`) and the guards it
    leaves alike merged (:mod:`neuronize.writing.guards_merged`); then, with ``tidy`` and when the
    fixes changed something, :func:`tidied`. ``new`` itself when no pass changed anything."""
    if options.target is Target.ACCELERATOR:
        new = merge_guards(name_device(new, source), source)
    if tidy and new is not module:
        new = tidied(new, source, options, name_tests)
    return new


def tidied(new: cst.Module, source: bytes, options: Options, name_tests: bool) -> cst.Module:
    """Defaults resolved in the body (:mod:`neuronize.writing.late_defaults`), the Neuron test
    defined once (:mod:`neuronize.writing.neuron_test`, with ``name_tests``), lines within the
    project's length (:mod:`neuronize.writing.wrapped`)."""
    tidied = late_defaults(new, source)
    if name_tests:
        tidied = name_neuron_test(tidied, source)
    return wrap_long_lines(tidied, source, limit_for(source, options.line_length))
