"""What ``--target`` means, in one place. Rules ask these functions instead of writing "neuron".

Three targets (``Options.target``):

- ``neuron``: Trainium through TorchNeuron (``"neuron"`` device and backend, ``torch.neuron``,
  ``torch_neuronx``). What the rules did before targets existed; its output never changes.
- ``accelerator``: portable code that runs unchanged on CPU, CUDA and Neuron. The device is
  ``torch.accelerator.current_accelerator().type`` when an accelerator is present, else
  ``"cpu"``; runtime calls go through ``torch.get_device_module()`` (``torch.cpu`` on a CPU-only
  machine) or ``torch.accelerator``; the process-group backend is
  ``dist.get_default_backend_for_device(device)``; CUDA-only calls and flags are guarded by
  ``torch.cuda.is_available()``.
- ``cpu``: the same edits aimed at the CPU (``"cpu"``, ``"gloo"``, CPU autocast in bf16, no
  compile backend override), to validate a migration locally before running it on Trainium.

Builders return ``(expression, imports)``; the imports go to ``Transform.fix(imports=...)``.
"""

from __future__ import annotations

import libcst as cst

from neuronize.context import FileContext
from neuronize.transform import ImportRequest
from neuronize.transforms._calls import is_cuda_available_call
from neuronize.transforms._literals import make_string
from neuronize.transforms._names import qualified_expr

NEURON, ACCELERATOR, CPU = "neuron", "accelerator", "cpu"
ALL = (NEURON, ACCELERATOR, CPU)
Built = tuple[cst.BaseExpression, tuple[ImportRequest, ...]]


def target(ctx: FileContext) -> str:
    return ctx.options.target


def is_neuron(ctx: FileContext) -> bool:
    return ctx.options.target == NEURON


def device_word(ctx: FileContext) -> str:
    """How messages name the target device: ``"neuron"``, ``"cpu"``, or the accelerator."""
    return {NEURON: '"neuron"', CPU: '"cpu"'}.get(ctx.options.target, "the current accelerator")


def _torch(ctx: FileContext) -> tuple[str, tuple[ImportRequest, ...]]:
    expr, imports = qualified_expr(ctx, "torch")
    assert isinstance(expr, cst.Name)
    return expr.value, imports


def accelerator_device_code(ctx: FileContext) -> tuple[str, tuple[ImportRequest, ...]]:
    """Source text of the accelerator device type with its CPU fallback."""
    t, imports = _torch(ctx)
    return (f'{t}.accelerator.current_accelerator().type if {t}.accelerator.is_available() '
            'else "cpu"'), imports


def device(ctx: FileContext, like: cst.CSTNode | None = None, *, parens: bool = False) -> Built:
    """The device (a string value) a CUDA device literal becomes.

    ``like`` gives the quote style (and parentheses, which are kept). ``parens`` wraps the
    accelerator's conditional expression where it sits inside a larger expression.
    """
    lpar = getattr(like, "lpar", ())
    rpar = getattr(like, "rpar", ())
    quote_like = like if isinstance(like, cst.SimpleString) else None
    if ctx.options.target == ACCELERATOR:
        code, imports = accelerator_device_code(ctx)
        if not lpar and parens:
            code = f"({code})"
        expr = cst.parse_expression(code)
        if lpar:
            expr = expr.with_changes(lpar=lpar, rpar=rpar)
        return expr, imports
    word = CPU if ctx.options.target == CPU else NEURON
    return make_string(word, quote_like).with_changes(lpar=lpar, rpar=rpar), ()


def device_text(ctx: FileContext) -> str:
    """How a message shows the new device."""
    if ctx.options.target == ACCELERATOR:
        return "the accelerator device (`current_accelerator().type`, else `\"cpu\"`)"
    return '"cpu"' if ctx.options.target == CPU else '"neuron"'


def is_available(ctx: FileContext) -> Built:
    """The availability check a ``torch.cuda.is_available`` function becomes (all targets)."""
    return qualified_expr(ctx, "torch.accelerator.is_available")


def autocast_dtype_default(ctx: FileContext) -> str:
    """The dtype inserted where autocast had none (bf16 on every target: CPU autocast takes it)."""
    return "bfloat16"


def compile_backend(ctx: FileContext) -> str | None:
    """The ``backend=`` that ``torch.compile`` gets, or None to keep PyTorch's default.

    ``neuron``: ``"neuron"``. ``cpu``: Inductor (the default) compiles for the CPU.
    ``accelerator``: the default backend picks the detected device (Inductor on CPU/CUDA, and
    TorchNeuron selects its own backend for a model on the Neuron device).
    """
    return NEURON if ctx.options.target == NEURON else None


def process_group_backend(ctx: FileContext, like: cst.CSTNode | None = None) -> Built:
    """The ``init_process_group`` backend: ``"neuron"``, ``"gloo"`` or derived from the device."""
    quote_like = like if isinstance(like, cst.SimpleString) else None
    lpar = getattr(like, "lpar", ())
    rpar = getattr(like, "rpar", ())
    if ctx.options.target == ACCELERATOR:
        func, imports = qualified_expr(ctx, "torch.distributed.get_default_backend_for_device")
        dev, more = device(ctx)
        call = cst.Call(func=func, args=[cst.Arg(dev)], lpar=lpar, rpar=rpar)
        return call, (*imports, *more)
    word = "gloo" if ctx.options.target == CPU else NEURON
    return make_string(word, quote_like).with_changes(lpar=lpar, rpar=rpar), ()


def backend_text(ctx: FileContext) -> str:
    return {NEURON: '`"neuron"`', CPU: '`"gloo"`'}.get(
        ctx.options.target, "`dist.get_default_backend_for_device(<device>)`")


def needs_torch_neuronx(ctx: FileContext) -> bool:
    """``import torch_neuronx`` only on the neuron target (the others must run without it)."""
    return ctx.options.target == NEURON


def runtime(ctx: FileContext, fn: str, neuron_name: str | None = None) -> Built | None:
    """A ``torch.cuda.<fn>`` runtime function's replacement for the target, or None if none.

    ``neuron``: ``neuron_name`` (``torch.neuron.x``, ``torch_neuronx.x``...). ``accelerator`` and
    ``cpu``: ``torch.get_device_module().<fn>`` when ``torch.cpu`` has it too (so it runs on
    a CPU-only machine), the ``torch.accelerator`` seeding-free equivalents otherwise unknown.
    """
    if ctx.options.target == NEURON:
        return qualified_expr(ctx, neuron_name) if neuron_name else None
    if fn in CPU_MODULE:
        t, imports = _torch(ctx)
        if ctx.options.target == CPU:
            return cst.parse_expression(f"{t}.cpu.{fn}"), imports
        return cst.parse_expression(f"{t}.get_device_module().{fn}"), imports
    return None


def guard(ctx: FileContext) -> Built:
    """The condition that keeps a CUDA-only statement for CUDA: ``torch.cuda.is_available()``."""
    func, imports = qualified_expr(ctx, "torch.cuda.is_available")
    return cst.Call(func=func), imports


def guarded(ctx: FileContext, stmt: cst.SimpleStatementLine) -> tuple[cst.If, tuple[ImportRequest, ...]]:
    """``stmt`` inside ``if torch.cuda.is_available():`` (its comments and blank lines kept)."""
    test, imports = guard(ctx)
    inner = stmt.with_changes(leading_lines=())
    node = cst.If(test=test, body=cst.IndentedBlock(body=[inner]), leading_lines=stmt.leading_lines)
    return node, imports


#: ``torch.cuda`` runtime functions that ``torch.cpu`` also has (so ``torch.get_device_module()``
#: gives a working function on every device)
CPU_MODULE = frozenset({
    "synchronize", "current_stream", "Stream", "Event", "stream", "device_count", "is_available",
    "current_device", "set_device",
})


def cuda_only_block(ctx: FileContext, node: cst.If) -> bool:
    """``if torch.cuda.is_available():`` whose every statement uses ``torch.cuda`` / cuDNN /
    ``torch.backends.cuda``: a CUDA-only block, as ``--target accelerator`` writes them."""
    if not is_cuda_available_call(ctx, node.test) or node.orelse is not None:
        return False
    body = node.body
    statements = body.body if isinstance(body, (cst.IndentedBlock, cst.SimpleStatementSuite)) else ()
    if not statements:
        return False
    for stmt in statements:
        code = ctx.module.code_for_node(stmt)
        if ".cuda." not in code and "cudnn" not in code:
            return False
    return True


def in_cuda_only_block(ctx: FileContext) -> bool:
    """Under ``--target accelerator``: the node being visited sits in a CUDA-only block (its
    test included), which is already portable and must stay as it is."""
    if ctx.options.target != ACCELERATOR:
        return False
    return any(isinstance(anc, cst.If) and cuda_only_block(ctx, anc) for anc in ctx.ancestors())


# -- device indexes, device types, backends (second pass of issue 8) ---------------------------------
def kept_cuda_index(ctx: FileContext, cuda_device: cst.BaseExpression, *, parens: bool = False) -> Built:
    """``--target accelerator`` for a CUDA device with an index (``f"cuda:{rank}"``, ``"cuda:1"``):
    ``<the original> if torch.cuda.is_available() else <accelerator device>``.

    On CUDA the index stays (torchrun code passes this device to ``torch.cuda.set_device``, which
    the accelerator target keeps for CUDA: without the index every rank would pick GPU 0). On
    Neuron the index is dropped: the ``neuron`` process group pins each process to one core,
    which is device 0 (reference D8), so ``f"neuron:{rank}"`` would fail; the CPU ignores it.
    """
    test, imports = guard(ctx)
    dev, more = device(ctx)
    body = cuda_device.with_changes(lpar=(), rpar=())
    lpar = getattr(cuda_device, "lpar", ())
    rpar = getattr(cuda_device, "rpar", ())
    if not lpar and parens:
        lpar, rpar = (cst.LeftParen(),), (cst.RightParen(),)
    expr = cst.IfExp(test=test, body=body, orelse=dev, lpar=lpar, rpar=rpar)
    return expr, (*imports, *more)


def is_kept_cuda_index(ctx: FileContext, node: cst.CSTNode) -> bool:
    """``<CUDA device> if torch.cuda.is_available() else <accelerator device>``, as
    :func:`kept_cuda_index` writes it: portable already, never rewritten again."""
    return (ctx.options.target == ACCELERATOR and isinstance(node, cst.IfExp)
            and is_cuda_available_call(ctx, node.test)
            and "accelerator" in ctx.module.code_for_node(node.orelse))


def in_kept_cuda_index(ctx: FileContext) -> bool:
    """The node being visited sits inside a :func:`kept_cuda_index` expression."""
    if ctx.options.target != ACCELERATOR:
        return False
    return any(is_kept_cuda_index(ctx, anc) for anc in ctx.ancestors())


def device_type_arg(ctx: FileContext, like: cst.CSTNode | None = None) -> Built:
    """A ``device_type`` argument (``GradScaler``, ``custom_fwd``, autocast): ``"neuron"``,
    ``"cpu"``, or the accelerator's type with its CPU fallback."""
    return device(ctx, like)


def retarget_literals(ctx: FileContext, original: cst.CSTNode, rewritten: cst.CSTNode,
                      *, parens: bool = True, value=None) -> Built:  # type: ignore[no-untyped-def]
    """``rewritten`` (a Neuron rewrite of ``original``) with each ``"neuron"`` string it introduced
    replaced by the target's device (strings already in ``original`` are kept).

    Lets a rule build its Neuron replacement once and derive the other targets from it."""
    if ctx.options.target == NEURON:
        return rewritten, ()
    old: set[int] = set()

    class _Collect(cst.CSTVisitor):
        def visit_SimpleString(self, node: cst.SimpleString) -> None:
            old.add(id(node))

    original.visit(_Collect())
    imports: list[ImportRequest] = []

    class _Swap(cst.CSTTransformer):
        def leave_SimpleString(self, before: cst.SimpleString, after: cst.SimpleString) -> cst.BaseExpression:
            if id(before) in old or before.evaluated_value != NEURON:
                return after
            if value is not None:  # another value than the device (a compile backend...)
                new, more = value(before)
            else:
                new, more = device(ctx, before, parens=parens and before is not rewritten)
            imports.extend(more)
            return new

        def leave_Arg(self, before: cst.Arg, after: cst.Arg) -> cst.Arg:
            # a call argument needs no parentheses around the conditional expression
            value = after.value
            if isinstance(value, cst.IfExp) and value.lpar and not isinstance(before.value, cst.IfExp):
                return after.with_changes(value=value.with_changes(lpar=(), rpar=()))
            return after

    result = rewritten.visit(_Swap())
    return result, tuple(imports)  # type: ignore[return-value]


def compile_backend_expr(ctx: FileContext) -> Built | None:
    """The ``backend=`` value ``torch.compile`` gets (None: keep PyTorch's default, Inductor).

    ``neuron``: ``"neuron"``. ``cpu``: none (Inductor compiles for the CPU). ``accelerator``:
    ``"neuron" if torch.accelerator.is_available() and torch.accelerator.current_accelerator().type
    == "neuron" else "inductor"``: the reference (C1) says TorchNeuron also selects its backend by
    itself for a model on the Neuron device but recommends writing it explicitly, so the choice is
    spelled out, from the detected device; Inductor everywhere else (the default on CPU and CUDA).
    """
    if ctx.options.target == NEURON:
        return make_string(NEURON), ()
    if ctx.options.target == CPU:
        return None
    t, imports = _torch(ctx)
    return cst.parse_expression(
        f'"neuron" if {t}.accelerator.is_available() and '
        f'{t}.accelerator.current_accelerator().type == "neuron" else "inductor"'), imports


def compile_backend_text(ctx: FileContext) -> str:
    return {NEURON: '`backend="neuron"`', CPU: "no `backend=` (Inductor compiles for the CPU)"}.get(
        ctx.options.target, '`backend="neuron"` on a Neuron device, else `"inductor"`')
