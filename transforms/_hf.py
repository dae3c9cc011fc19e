"""Helpers shared by the Hugging Face (NRN5xx) rules."""

from __future__ import annotations

import libcst as cst

from neuronize.context import FileContext


def training_arguments_class(ctx: FileContext, call: cst.Call) -> str | None:
    """The class name when ``call`` builds transformers' ``*TrainingArguments`` or a TRL ``*Config``.

    Both derive from ``transformers.TrainingArguments`` and take its precision and compile
    arguments. optimum-neuron's ``NeuronTrainingArguments`` is XLA-era code (NRN504) and is skipped.
    """
    func = call.func
    if isinstance(func, cst.Attribute):
        last = func.attr.value
        if not (last.endswith(("TrainingArguments", "Config"))):
            return None
    elif not isinstance(func, cst.Name):
        return None
    qualified = ctx.qualify(func)
    if not qualified:
        return None
    cls = qualified.rsplit(".", 1)[-1]
    if qualified.startswith("transformers.") and cls.endswith("TrainingArguments"):
        return cls
    if qualified.startswith("trl.") and cls.endswith("Config"):
        return cls
    return None

