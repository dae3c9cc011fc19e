"""Helpers shared by the distributed (NRN4xx) and XLA-era (NRN504) rules."""

from __future__ import annotations

from typing import Sequence

import libcst as cst

from neuronize.transform import Evidence, ImportRequest, Safety, Transform
from neuronize.transforms._helpers import make_string, string_value

DIST_FUNCS = ("init_process_group", "new_group", "barrier", "is_nccl_available")


def dist_function(qualified: str | None) -> str | None:
    """``"init_process_group"`` for ``torch.distributed.init_process_group`` (any module path)."""
    if not qualified:
        return None
    for prefix in ("torch.distributed.distributed_c10d.", "torch.distributed."):
        if qualified.startswith(prefix):
            rest = qualified[len(prefix):]
            return rest if "." not in rest else None
    return None


def nccl_backend(value: str) -> str | None:
    """How a backend string names NCCL: ``"plain"`` (``"nccl"``, ``"cuda:nccl"``),
    ``"mixed"`` (``"cpu:gloo,cuda:nccl"``), or None when it does not."""
    text = value.strip().lower()
    if text in ("nccl", "cuda:nccl"):
        return "plain"
    if "," in text:
        pairs = [p.strip().split(":") for p in text.split(",")]
        if all(len(p) == 2 for p in pairs) and ["cuda", "nccl"] in [[a.strip(), b.strip()] for a, b in pairs]:
            return "mixed"
    return None


def neuron_string(like: cst.BaseExpression) -> cst.SimpleString:
    """``"neuron"`` in the quote style of ``like``, keeping its parentheses."""
    new = make_string("neuron", like if isinstance(like, cst.SimpleString) else None)
    return new.with_changes(lpar=getattr(like, "lpar", ()), rpar=getattr(like, "rpar", ()))


def is_string(node: cst.CSTNode, *values: str) -> bool:
    value = string_value(node)
    return value is not None and value in values


# -- inserting an element into a list / tuple / dict literal ---------------------------------
def insert_after(elements: Sequence, index: int, new):  # type: ignore[no-untyped-def]
    """``elements`` with ``new`` (an Element/DictElement) inserted after ``elements[index]``.

    The new element reuses the separator of its neighbours, so one-line and one-per-line
    literals keep their layout.
    """
    items = list(elements)
    anchor = items[index]
    separator = None
    for item in items[:-1]:
        if isinstance(item.comma, cst.Comma):
            separator = item.comma
            break
    if separator is None:
        separator = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    if index < len(items) - 1:
        new = new.with_changes(comma=anchor.comma)
    else:
        new = new.with_changes(comma=anchor.comma)
        items[index] = anchor.with_changes(comma=separator)
    items.insert(index + 1, new)
    return items


# -- import torch_neuronx  # noqa: F401 ---------------------------------------------------------
def _imports_torch(stmt: cst.CSTNode, prefix: str) -> bool:
    if not isinstance(stmt, cst.SimpleStatementLine):
        return False
    for small in stmt.body:
        if isinstance(small, cst.Import):
            for alias in small.names:
                name = cst.Module([]).code_for_node(alias.name)
                if name == prefix or name.startswith(prefix + "."):
                    return True
        elif isinstance(small, cst.ImportFrom) and small.module is not None and not small.relative:
            name = cst.Module([]).code_for_node(small.module)
            if name == prefix or name.startswith(prefix + "."):
                return True
    return False


def import_anchor(module: cst.Module) -> cst.SimpleStatementLine | None:
    """The top-level import line ``import torch_neuronx`` should follow: the one importing
    ``torch.distributed`` if any, else the last top-level line importing ``torch``."""
    for prefix in ("torch.distributed", "torch"):
        found = [s for s in module.body if _imports_torch(s, prefix)]
        if found:
            return found[0] if prefix == "torch.distributed" else found[-1]  # type: ignore[return-value]
    return None


def torch_neuronx_line() -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine(
        body=[cst.Import(names=[cst.ImportAlias(name=cst.Name("torch_neuronx"))])],
        trailing_whitespace=cst.TrailingWhitespace(
            whitespace=cst.SimpleWhitespace("  "), comment=cst.Comment("# noqa: F401")
        ),
    )


def request_torch_neuronx(rule: Transform, safety: Safety) -> tuple[ImportRequest, ...]:
    """Propose ``import torch_neuronx  # noqa: F401`` (reference 0.3) as a fix of its own.

    Returns the import requests a backend fix should carry instead, when the file has no
    top-level torch import to put the line after (the engine then adds a plain import).
    """
    ctx = rule.ctx
    if ctx.options.target != "neuron" or ctx.names.imports_module("torch_neuronx"):
        return ()  # --target cpu / accelerator: the output must run without torch_neuronx
    anchor = import_anchor(ctx.module)
    if anchor is None:
        return (ImportRequest("torch_neuronx"),)
    rule.fix(
        anchor,
        cst.FlattenSentinel([anchor, torch_neuronx_line()]),
        "adds `import torch_neuronx  # noqa: F401` after this line: the distributed guide imports it "
        "to register the `neuron` device and process-group backend",
        safety=safety,
        evidence=Evidence.DOC,
    )
    return ()
