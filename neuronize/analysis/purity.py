"""Which expressions can be dropped with the statement that holds them: no side effects.

The engine deletes an ``if`` (``for``, ``while``, ``with``) whose body removals emptied only when
evaluating its header does nothing observable: names, attributes, comparisons, boolean
operations, constants, and calls to predicates that only ask a question.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

Qualify = Callable[[cst.CSTNode], str | None]

#: calls that only answer a question (qualified names; builtins by their bare name)
PURE_PREDICATES = frozenset({
    "isinstance", "issubclass", "hasattr", "callable", "len", "range", "enumerate", "zip", "reversed",
    "torch.cuda.is_available", "torch.cuda.device_count", "torch.cuda.is_bf16_supported",
    "torch.cuda.is_initialized", "torch.accelerator.is_available", "torch.accelerator.device_count",
    "torch.accelerator.current_accelerator", "torch.accelerator.current_device_index",
    "torch.backends.mps.is_available", "torch.backends.cudnn.is_available",
    "torch.distributed.is_available", "torch.distributed.is_initialized",
    "torch.distributed.is_nccl_available", "torch.distributed.is_torchelastic_launched",
    "torch.distributed.get_rank", "torch.distributed.get_world_size",
    "torch.is_tensor", "torch.is_floating_point", "torch.is_grad_enabled",
    "torch.compiler.is_compiling", "torch.jit.is_scripting", "torch.jit.is_tracing",
})

#: methods of ``str`` that only answer a question or build a new string (``device.startswith("cuda:")``):
#: a call of one on a pure receiver is pure
PURE_STRING_METHODS = frozenset({
    "startswith", "endswith", "isdigit", "isnumeric", "isalpha", "isalnum", "lower", "upper", "strip",
})

#: context managers whose entry and exit around an empty body do nothing observable
PURE_CONTEXTS = frozenset({
    "torch.no_grad", "torch.enable_grad", "torch.inference_mode", "torch.autocast",
    "torch.amp.autocast", "torch.cuda.amp.autocast", "torch.cpu.amp.autocast",
    "contextlib.nullcontext", "torch.cuda.nvtx.range", "torch.profiler.record_function",
    "torch.autograd.profiler.record_function", "torch.backends.cuda.sdp_kernel",
    "torch.nn.attention.sdpa_kernel", "torch.cuda.device", "torch.cuda.stream",
})

_CONSTANTS = (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString, cst.Ellipsis)


def _call_name(call: cst.Call, qualify: Qualify) -> str | None:
    if isinstance(call.func, cst.Name) and call.func.value in PURE_PREDICATES:
        return call.func.value
    return qualify(call.func)


def _pure_arguments(call: cst.Call, qualify: Qualify) -> bool:
    return all(not arg.star and is_pure(arg.value, qualify) for arg in call.args)


def is_pure(expr: cst.BaseExpression, qualify: Qualify) -> bool:
    """Evaluating ``expr`` has no side effects worth keeping."""
    if isinstance(expr, (cst.Name, *_CONSTANTS)):
        return True
    if isinstance(expr, cst.Attribute):
        return is_pure(expr.value, qualify)
    if isinstance(expr, cst.UnaryOperation):
        return is_pure(expr.expression, qualify)
    if isinstance(expr, cst.BooleanOperation):
        return is_pure(expr.left, qualify) and is_pure(expr.right, qualify)
    if isinstance(expr, cst.Comparison):
        return is_pure(expr.left, qualify) and all(is_pure(c.comparator, qualify) for c in expr.comparisons)
    if isinstance(expr, (cst.Tuple, cst.List, cst.Set)):
        return all(isinstance(e, cst.Element) and is_pure(e.value, qualify) for e in expr.elements)
    if isinstance(expr, cst.Call):
        func = expr.func
        if isinstance(func, cst.Attribute) and func.attr.value in PURE_STRING_METHODS:
            return is_pure(func.value, qualify) and _pure_arguments(expr, qualify)
        return _call_name(expr, qualify) in PURE_PREDICATES and _pure_arguments(expr, qualify)
    return False


def is_pure_context(item: cst.WithItem, qualify: Qualify) -> bool:
    """Entering and leaving ``item`` around an empty body does nothing observable."""
    expr = item.item
    if isinstance(expr, cst.Call):
        return qualify(expr.func) in PURE_CONTEXTS and _pure_arguments(expr, qualify)
    return False
