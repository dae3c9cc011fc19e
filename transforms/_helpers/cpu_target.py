"""``--target cpu``: CUDA questions the CPU answers by itself.

The cpu target rewrites code to run on the CPU (to validate a migration locally). Most CUDA
queries there become ``torch.accelerator`` ones, which is right where their answer only chooses
a path (``if torch.accelerator.is_available(): ...`` runs the CPU path on a laptop). Two uses
would stop the rewritten code on the very machine it is written for:

- a requirement that CUDA be there, ``assert torch.cuda.is_available(), "needs a GPU"`` or
  ``if not torch.cuda.is_available(): raise ...`` / ``sys.exit(...)``: false without an
  accelerator, so the CPU run stops there. The target's device, the CPU, is always there: the
  requirement goes (:func:`cpu_requirement`).
- a GPU index computed from the device count, ``device = rank % torch.cuda.device_count()``:
  the count is 0 on the CPU (``ZeroDivisionError``), and an integer device names an accelerator
  anyway. Where the name holds the device (:func:`_device_choice.device_named`), the index is the
  CPU device, ``"cpu"`` (:func:`cpu_device_index`); another name (a shard index) is left to the
  count's rewrite. So is the current GPU index handed to a device argument
  (``FSDP(..., device_id=torch.cuda.current_device())``): the CPU has no current index.
"""

from __future__ import annotations

import libcst as cst

from neuronize.analysis.context import FileContext
from neuronize.transform import Replacement
from neuronize.transforms._helpers import per_target
from neuronize.transforms._helpers.calls import is_cuda_available_call
from neuronize.analysis.syntax import ends_early
from neuronize.transforms._helpers.device_choice import device_named
from neuronize.transforms._helpers.literals import make_string


def cpu_requirement(ctx: FileContext, call: cst.Call) -> cst.CSTNode | None:
    """The statement that stops the run where ``call`` (``torch.cuda.is_available()``) is false:
    ``assert <call>[, message]``, or ``if not <call>:`` with no ``else`` whose body ends the run
    (``raise``, ``sys.exit``...); None for any other use."""
    parents = ctx.ancestors()
    parent = next((anc for anc in parents if anc is not call), None)
    if isinstance(parent, cst.Assert) and parent.test is call:
        return parent
    if not (isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Not)
            and not parent.lpar and parent.expression is call):
        return None
    statement = next(parents, None)
    if (isinstance(statement, cst.If) and statement.test is parent and statement.orelse is None
            and ends_early(statement.body, stops_only=True)):
        return statement
    return None


def cpu_device_index(ctx: FileContext, call: cst.Call) -> cst.BinaryOperation | None:
    """``<rank> % <call>`` (``call`` the CUDA device count) assigned to a name that holds a device
    (``device = rank % torch.cuda.device_count()``): the expression that becomes ``"cpu"``."""
    ancestors = ctx.ancestors()
    operation = next((anc for anc in ancestors if anc is not call), None)
    if not (isinstance(operation, cst.BinaryOperation) and isinstance(operation.operator, cst.Modulo)
            and operation.right is call and not is_cuda_available_call(ctx, operation.left)):
        return None
    assign = next(ancestors, None)
    if (isinstance(assign, cst.Assign) and assign.value is operation and len(assign.targets) == 1
            and isinstance(assign.targets[0].target, cst.Name) and device_named(assign.targets[0].target.value)):
        return operation
    return None


def cpu_answer(ctx: FileContext, call: cst.Call | None, fn: str) -> tuple[cst.CSTNode, Replacement, str] | None:
    """On the cpu target, the edit of a CUDA query that the CPU answers by itself: ``(node, new,
    message)``, ``new`` a ``RemoveFromParent`` for a requirement that goes; None elsewhere."""
    if ctx.options.target != per_target.CPU or call is None:
        return None
    if fn == "is_available":
        statement = cpu_requirement(ctx, call)
        if statement is not None:
            return (ctx.statement_to_remove(statement), cst.RemoveFromParent(),
                    "requirement that CUDA be there deleted: the CPU target runs on the CPU, which is "
                    "always there (the check would stop the CPU run)")
    if fn == "device_count":
        index = cpu_device_index(ctx, call)
        if index is not None:
            return (index, make_string("cpu", None).with_changes(lpar=index.lpar, rpar=index.rpar),
                    "GPU index from the device count -> `\"cpu\"`: the count is 0 on the CPU, and an "
                    "integer device names an accelerator")
    if fn == "current_device" and _device_argument(ctx, call):
        return (call, make_string("cpu", None), "the current GPU index as a device argument -> `\"cpu\"`: "
                "without an accelerator there is no current index (`torch.accelerator` raises)")
    return None


def _device_argument(ctx: FileContext, call: cst.Call) -> bool:
    """``call`` is the value of a keyword argument that names a device (``device_id=...``)."""
    parent = next((anc for anc in ctx.ancestors() if anc is not call), None)
    return (isinstance(parent, cst.Arg) and parent.value is call and parent.keyword is not None
            and device_named(parent.keyword.value))
