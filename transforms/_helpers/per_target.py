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

from collections.abc import Callable
from dataclasses import asdict, dataclass

import libcst as cst

from neuronize.analysis.context import FileContext
from neuronize.transform import ImportRequest
from neuronize.transforms._helpers.calls import is_cuda_available_call
from neuronize.writing.device_name import spelled_devices
from neuronize.transforms._helpers.messages import short
from neuronize.transforms._helpers.literals import make_string, string_like
from neuronize.transforms._helpers.names import qualified_expr
from neuronize.types import Target
from neuronize.analysis.walk import visit

#: The targets are :class:`neuronize.types.Target` (defined once, read by config and CLI too);
#: short names for the rules, which compare ``_target.target(ctx) == _target.NEURON``.
NEURON, ACCELERATOR, CPU = Target.NEURON, Target.ACCELERATOR, Target.CPU
#: every target: the ``targets`` of a rule that writes its fixes for all of them
ALL: tuple[Target, ...] = tuple(Target)
Built = tuple[cst.BaseExpression, tuple[ImportRequest, ...]]


def target(ctx: FileContext) -> Target:
    """The file's target: :data:`NEURON`, :data:`ACCELERATOR` or :data:`CPU`."""
    return ctx.options.target


# -- how messages name what a target writes ----------------------------------------------------
@dataclass(frozen=True)
class Vocabulary:
    """The named fields of message templates (``"... -> {device}"``), one set per target."""

    device: str  # the device value, as a message shows it in code (`device_type={device}`)
    kind: str  # the kind of device, as an adjective ("Neuron autocast", "the CPU device")
    platform: str  # where the migrated code runs ("`torch.compile(...)` for Neuron")
    non_cuda: str  # the devices a CUDA-only setting means nothing on ("meaningless on Neuron")
    backend: str  # the process-group backend written
    compile_backend: str  # what `torch.compile` gets
    backend_name: str  # the compile backend a string setting names (Trainer's `torch_compile_backend`)


VOCABULARY = {
    NEURON: Vocabulary(
        device='"neuron"', kind="Neuron", platform="Neuron", non_cuda="Neuron", backend='`"neuron"`',
        compile_backend='`backend="neuron"`', backend_name='"neuron"'),
    CPU: Vocabulary(
        device='"cpu"', kind="CPU", platform="the CPU", non_cuda="the CPU", backend='`"gloo"`',
        compile_backend="no `backend=` (Inductor compiles for the CPU)", backend_name='"inductor"'),
    ACCELERATOR: Vocabulary(
        device='<the accelerator\'s type, else "cpu">', kind="accelerator", platform="any device",
        non_cuda="the CPU and Neuron", backend="`dist.get_default_backend_for_device(<device>)`",
        compile_backend='`backend="neuron"` on a Neuron device, else `"inductor"`',
        backend_name='<"neuron" on a Neuron device, else "inductor">'),
}


def fill(target: Target, template: str, **fields: object) -> str:
    """``template`` filled from ``target``'s :class:`Vocabulary` (and ``fields``)."""
    return template.format_map({**asdict(VOCABULARY[target]), **fields})


def say(ctx: FileContext, template: str, **fields: object) -> str:
    """``template`` filled for the file's target (see :func:`fill`)."""
    return fill(ctx.options.target, template, **fields)


def _torch(ctx: FileContext) -> tuple[str, tuple[ImportRequest, ...]]:
    expr, imports = qualified_expr(ctx, "torch")
    assert isinstance(expr, cst.Name)
    return expr.value, imports


def device(ctx: FileContext, like: cst.CSTNode | None = None, *, parens: bool = False) -> Built:
    """The device (a string value) a CUDA device literal becomes.

    ``like`` gives the quote style (and parentheses, which are kept). ``parens`` wraps the
    accelerator's conditional expression where it sits inside a larger expression.
    """
    lpar = getattr(like, "lpar", ())
    rpar = getattr(like, "rpar", ())
    quote_like = like if isinstance(like, cst.SimpleString) else None
    if ctx.options.target == ACCELERATOR:
        t, imports = _torch(ctx)
        code = f'{t}.accelerator.current_accelerator().type if {t}.accelerator.is_available() else "cpu"'
        if not lpar and parens:
            code = f"({code})"
        expr = cst.parse_expression(code)
        if lpar:
            expr = expr.with_changes(lpar=lpar, rpar=rpar)
        return expr, imports
    word = CPU if ctx.options.target == CPU else NEURON
    return make_string(word, quote_like).with_changes(lpar=lpar, rpar=rpar), ()


def spell(ctx: FileContext, expr: cst.CSTNode, limit: int = 90) -> str:
    """How a message quotes ``expr``, code a fix writes: the accelerator target's device named as
    :data:`VOCABULARY` names it (spelt out, it would fill the message, and it is the same code
    everywhere)."""
    text = short(expr, None)
    if ctx.options.target == ACCELERATOR:
        text = spelled_devices(text, VOCABULARY[ACCELERATOR].device)
    return text if len(text) <= limit else text[: limit - 3] + "..."


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


def available(ctx: FileContext) -> Built:
    """The test for "the target's device is here", which a CUDA availability check becomes.

    ``neuron``: :func:`neuron_present`, ``hasattr(torch, "accelerator") and
    torch.accelerator.is_available() and torch.accelerator.current_accelerator().type ==
    "neuron"``. ``torch.accelerator.is_available()`` alone is also true on an MPS, XPU or CUDA
    machine, where the Neuron path would then be taken and fail; ``torch.neuron`` exists only where
    torch-neuronx is installed. ``accelerator`` and ``cpu``: ``torch.accelerator.is_available()``
    (the code that follows uses the current accelerator, whichever it is).

    A boolean operation: parenthesise it (``_nodes.parenthesized``) where it becomes an operand.
    """
    if ctx.options.target == NEURON:
        return neuron_present(ctx)
    t, imports = _torch(ctx)
    return cst.parse_expression(f"{t}.accelerator.is_available()"), imports


def needs_torch_neuronx(ctx: FileContext) -> bool:
    """``import torch_neuronx`` only on the neuron target (the others must run without it)."""
    return ctx.options.target == NEURON


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


#: what a file does that must come before CUDA is first queried (the driver reads the visible
#: devices once; a forked child cannot use a CUDA its parent initialised)
_BEFORE_CUDA = ("CUDA_VISIBLE_DEVICES", "os.fork(")


def guard_too_early(ctx: FileContext) -> str | None:
    """Under ``--target accelerator``: why a ``torch.cuda.is_available()`` guard around the
    module-level statement being visited would query CUDA too early, if it would: the file sets
    ``CUDA_VISIBLE_DEVICES`` (or forks) later, in a function or further down. The original
    statement (a setting) queried nothing; the guard runs at import, before that."""
    if not any(word.encode() in ctx.source for word in _BEFORE_CUDA):
        return None
    if any(isinstance(anc, (cst.FunctionDef, cst.ClassDef)) for anc in ctx.ancestors()):
        return None
    top = ctx.stack[1] if len(ctx.stack) > 1 else None
    later = False
    for stmt in ctx.module.body:
        if stmt is top:
            later = True
            continue
        if later or isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            code = ctx.module.code_for_node(stmt)
            for word in _BEFORE_CUDA:
                if word in code:
                    return f"`{word.rstrip('(')}` comes later in this file"
    return None


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


def _swap_neuron_strings(original: cst.CSTNode, rewritten: cst.CSTNode,
                         make: Callable[[cst.SimpleString, bool], cst.BaseExpression]) -> cst.CSTNode:
    """``rewritten`` with each ``"neuron"`` string it introduced (not in ``original``) replaced by
    ``make(string, nested)``; a call argument loses the parentheses of a conditional expression."""
    old: set[int] = set()

    class _Collect(cst.CSTVisitor):
        def visit_SimpleString(self, node: cst.SimpleString) -> None:
            old.add(id(node))

    visit(original, _Collect())

    class _Swap(cst.CSTTransformer):
        def leave_SimpleString(self, before: cst.SimpleString, after: cst.SimpleString) -> cst.BaseExpression:
            if id(before) in old or before.evaluated_value != NEURON:
                return after
            return make(before, before is not rewritten)

        def leave_Arg(self, before: cst.Arg, after: cst.Arg) -> cst.Arg:
            value = after.value
            if isinstance(value, cst.IfExp) and value.lpar and not isinstance(before.value, cst.IfExp):
                return after.with_changes(value=value.with_changes(lpar=(), rpar=()))
            return after

    return rewritten.visit(_Swap())  # type: ignore[return-value]


def retarget_literals(ctx: FileContext, original: cst.CSTNode, rewritten: cst.CSTNode) -> Built:
    """``rewritten`` (a Neuron rewrite of ``original``) with each ``"neuron"`` string it introduced
    replaced by the target's device (strings already in ``original`` are kept).

    Lets a rule build its Neuron replacement once and derive the other targets from it."""
    if ctx.options.target == NEURON:
        return rewritten, ()  # type: ignore[return-value]
    imports: list[ImportRequest] = []

    def make(like: cst.SimpleString, nested: bool) -> cst.BaseExpression:
        new, more = device(ctx, like, parens=nested)
        imports.extend(more)
        return new

    swapped = _swap_neuron_strings(original, rewritten, make)
    return _one_value(swapped), tuple(imports)  # type: ignore[return-value]


def _one_value(node: cst.CSTNode) -> cst.CSTNode:
    """``node``, or its value where it is a conditional expression whose two branches are the same
    code (``"cpu" if "cpu" in device else "cpu"``, what a CPU choice becomes under ``--target
    cpu``): the test decides nothing then (and :func:`_plain_test` has no effects to keep)."""
    if isinstance(node, cst.IfExp) and _plain_test(node.test):
        body, orelse = (n.with_changes(lpar=(), rpar=()) for n in (node.body, node.orelse))
        if cst.Module([]).code_for_node(body) == cst.Module([]).code_for_node(orelse):
            return body
    return node


def _plain_test(test: cst.BaseExpression) -> bool:
    """``test`` is made of comparisons and ``.startswith(...)`` tests (nothing it calls has effects)."""
    if isinstance(test, cst.BooleanOperation):
        return _plain_test(test.left) and _plain_test(test.right)
    if isinstance(test, cst.UnaryOperation):
        return _plain_test(test.expression)
    if isinstance(test, cst.Call):
        return isinstance(test.func, cst.Attribute) and test.func.attr.value == "startswith"
    return isinstance(test, cst.Comparison)


_PLACEHOLDER = '"@device@"'


def shown(ctx: FileContext, original: cst.CSTNode, rewritten: cst.CSTNode, limit: int = 90) -> str:
    """How a message quotes ``rewritten`` (a Neuron rewrite of ``original``) under the target:
    the device it introduced named as the target's vocabulary does (``{device}``)."""
    if ctx.options.target == NEURON:
        return short(rewritten, limit)
    marked = _swap_neuron_strings(original, rewritten, lambda like, nested: cst.SimpleString(_PLACEHOLDER))
    text = short(marked, None).replace(_PLACEHOLDER, VOCABULARY[ctx.options.target].device)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def compile_backend(ctx: FileContext) -> Built | None:
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
    test, imports = neuron_present(ctx)
    return cst.IfExp(test=test, body=make_string(NEURON), orelse=make_string("inductor")), imports


def neuron_only(ctx: FileContext, value: cst.BaseExpression, elsewhere: cst.BaseExpression) -> Built:
    """``value if <the accelerator is Neuron> else elsewhere``: what a fix writes for Neuron alone
    (bf16 for ``.half()`` and in an autocast, the static KV cache), every other host keeping
    ``elsewhere`` as before; on the cpu target, a local check of the migration, ``value`` itself."""
    if ctx.options.target == CPU:
        return value, ()
    test, imports = neuron_present(ctx)
    return cst.IfExp(test=test, body=value, orelse=elsewhere), imports


def neuron_present(ctx: FileContext) -> Built:
    """The test "the accelerator here is Neuron", on any target: ``torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type == "neuron"`` (false on CPU, CUDA and MPS).
    What ``--target accelerator`` writes where only Neuron takes a path (its compile backend,
    bf16 in a CUDA autocast).

    On the neuron target it asks ``hasattr(torch, "accelerator")`` first: ``torch.accelerator`` is
    new in torch 2.6, and a project that admits an older torch must keep running (the test False)
    on every host it ran on. The accelerator target needs torch 2.6 anyway (it calls
    ``torch.accelerator`` outside any test), so it is written without it."""
    t, imports = _torch(ctx)
    code = f'{t}.accelerator.is_available() and {t}.accelerator.current_accelerator().type == "neuron"'
    if ctx.options.target == NEURON:
        code = f'hasattr({t}, "accelerator") and {code}'
    return cst.parse_expression(code), imports


def backend_name(ctx: FileContext, like: cst.CSTNode | None = None) -> Built:
    """The compile backend a setting names where a string is required (the Trainer's
    ``torch_compile_backend``): :func:`compile_backend`, and ``"inductor"`` (the CPU's compiler)
    where that keeps PyTorch's default. ``like`` gives the quote style and parentheses."""
    chosen = compile_backend(ctx)
    if chosen is None:
        return string_like(like, "inductor") if like is not None else make_string("inductor"), ()
    expr, imports = chosen
    if isinstance(expr, cst.SimpleString) and like is not None:
        return string_like(like, expr.evaluated_value), imports  # type: ignore[arg-type]
    return expr, imports


def accelerator_present(ctx: FileContext) -> Built:
    """The test "there is an accelerator", ``torch.accelerator.is_available()``: what the accelerator
    target writes a host-neutral call (``torch.accelerator.empty_cache()``, which raises without an
    accelerator) under. That target needs a torch with ``torch.accelerator`` anyway."""
    t, imports = _torch(ctx)
    return cst.parse_expression(f"{t}.accelerator.is_available()"), imports
