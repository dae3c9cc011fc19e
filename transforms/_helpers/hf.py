"""Helpers shared by the Hugging Face (NRN5xx) rules."""

from __future__ import annotations

import libcst as cst

from neuronize.analysis.context import FileContext
from neuronize.analysis.placed_loaders import PLANNERS
from neuronize.transforms._helpers.literals import is_false, string_value


def training_arguments_class(ctx: FileContext, call: cst.Call) -> str | None:
    """The class name when ``call`` builds transformers' ``*TrainingArguments`` (Sentence
    Transformers' too) or a TRL ``*Config``.

    All derive from ``transformers.TrainingArguments`` and take its precision and compile
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
    if qualified.startswith(("transformers.", "sentence_transformers.")) and cls.endswith("TrainingArguments"):
        return cls  # Sentence Transformers' subclass takes the same arguments
    if qualified.startswith("trl.") and cls.endswith("Config"):
        return cls
    return None



#: keys of a DeepSpeed configuration (the dict handed to `deepspeed.initialize(config=...)` or
#: `TrainingArguments(deepspeed=...)`)
DEEPSPEED_KEYS = frozenset({"train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps",
                            "zero_optimization", "optimizer", "scheduler", "gradient_clipping", "bf16",
                            "zero_allow_untested_optimizer", "steps_per_print", "wall_clock_breakdown"})
#: keys of DeepSpeed's `"fp16"` section that configure dynamic loss scaling
LOSS_SCALING_KEYS = frozenset({"loss_scale", "initial_scale_power", "loss_scale_window", "hysteresis",
                               "min_loss_scale", "consecutive_hysteresis"})


def _keys(node: cst.Dict) -> dict[str, cst.BaseExpression]:
    found = {}
    for el in node.elements:
        if isinstance(el, cst.DictElement):
            key = string_value(el.key)
            if key is not None:
                found[key] = el.value
    return found


def deepspeed_fp16_section(node: cst.Dict) -> cst.DictElement | None:
    """The `"fp16": {...}` entry of a DeepSpeed config dict literal when it turns fp16 on (`"enabled":
    True` or `"auto"`, or loss-scaling settings without `"enabled": False`); None otherwise, and for
    dicts that are no DeepSpeed config (no other DeepSpeed key, no loss-scaling key)."""
    for el in node.elements:
        if not (isinstance(el, cst.DictElement) and string_value(el.key) == "fp16" and isinstance(el.value, cst.Dict)):
            continue
        section = _keys(el.value)
        enabled = section.get("enabled")
        if enabled is not None and (is_false(enabled) or string_value(enabled) == "false"):
            return None
        scaling = bool(LOSS_SCALING_KEYS & set(section))
        if (scaling or DEEPSPEED_KEYS & set(_keys(node))) and (enabled is not None or scaling):
            return el
    return None


def device_map_kind(node: cst.BaseExpression) -> str | None:
    """What a ``device_map`` value says: ``"planner"`` (``"auto"``...), ``"gpu"`` (``"cuda:0"``,
    ``0``, ``{"": 0}``, an f-string naming cuda), ``"variable"`` (a device from a name or an
    expression: ``{"": local_rank}``, ``args.device_map``), or None (host devices only, ``None``).
    A conditional expression says what its strongest arm says (planner, then gpu, then variable)."""
    value = string_value(node)
    if value is not None:
        if value in PLANNERS:
            return "planner"
        return "gpu" if value == "cuda" or value.startswith("cuda:") else None
    if isinstance(node, cst.Integer) or (isinstance(node, cst.FormattedString)
                                         and "cuda" in cst.Module([]).code_for_node(node)):
        return "gpu"
    if isinstance(node, cst.Name) and node.value in ("None", "True", "False"):
        return None
    if isinstance(node, cst.IfExp):  # `"auto" if gpus > 1 else None`: a plan on some runs
        arms = {device_map_kind(node.body), device_map_kind(node.orelse)}
        return next((kind for kind in ("planner", "gpu", "variable") if kind in arms), None)
    if isinstance(node, cst.Dict):
        kinds = {device_map_kind(el.value) for el in node.elements if isinstance(el, cst.DictElement)}
        return "gpu" if "gpu" in kinds else "variable" if kinds - {None} else None
    return "variable"


def entry_key(target: cst.BaseExpression) -> str | None:
    """The string key of an assignment target ``options["device_map"]`` (a keyword argument kept in
    a dict until the call), else None."""
    if isinstance(target, cst.Subscript) and len(target.slice) == 1 and isinstance(target.slice[0].slice, cst.Index):
        return string_value(target.slice[0].slice.value)
    return None
