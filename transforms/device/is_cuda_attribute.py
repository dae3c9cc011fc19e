"""NRN104: ``x.is_cuda`` -> ``x.device.type in ("cuda", "neuron")``."""

from __future__ import annotations

import re

import libcst as cst

from neuronize.analysis.context import FileContext, dotted_name
from neuronize.transforms._helpers.nodes import assigned_names
from neuronize.transforms._helpers.cuda_guard import flag_uses, guarded_code, scan
from neuronize.transforms._helpers.cuda_runtime import Context, CudaRef, classify
from neuronize.transforms._helpers.messages import short
from neuronize.transforms._helpers import per_target
from neuronize.transform import Evidence, Example, Safety, Transform
from neuronize.analysis.walk import iter_syntax, visit

# Parents under which a comparison needs no parentheses (it binds tighter than these).
NO_PARENS = (
    cst.Arg, cst.Assign, cst.AnnAssign, cst.AugAssign, cst.If, cst.While, cst.IfExp,
    cst.BooleanOperation, cst.Assert, cst.Return, cst.Expr, cst.Element, cst.DictElement,
    cst.Lambda, cst.CompIf, cst.Yield, cst.Index, cst.ListComp, cst.SetComp, cst.GeneratorExp,
)


#: bytes of a file whose `is_cuda` checks choose or feed CUDA kernels: a `torch.cuda.device(...)`
#: context (or the `torch.neuron.device(...)` another rule made of it: a second run decides the
#: same), a kernel language (Triton, Helion, TileLang, CUTLASS), a launch `kernel[grid](...)`, a
#: compiled extension, a choice among SDPA's CUDA kernels (`SDPBackend`: flash, memory-efficient,
#: cuDNN), or an `is_cuda` line that says "kernel" / "fused". Every `is_cuda` in such a
#: file is kept (one decision per file: the assert that keeps other tensors out of a kernel and the
#: check that picks it go together).
_KERNEL_FILE = re.compile(
    rb"(?:cuda|neuron)\.device\(|^\s*(?:import|from)\s+(?:triton|helion|tilelang|cutlass)\b|\w\[[^\]\n]*grid[^\]\n]*\]\(|load_inline\(|"
    rb"\bSDPBackend\b|is_cuda\b[^\n]*(?:kernel|fused)|(?:kernel|fused)[^\n]*\bis_cuda\b", re.MULTILINE | re.IGNORECASE)

#: bytes that can assign or define `is_cuda` (a superset of what `_AssignedIsCuda` finds)
_DEFINES_IS_CUDA = re.compile(rb"\bis_cuda\b[^\n=]*=(?!=)|def\s+is_cuda\b")


class _AssignedIsCuda(cst.CSTVisitor):
    """Receivers whose ``.is_cuda`` the file defines itself (``self.is_cuda = ...``, ``def is_cuda``)."""

    def __init__(self) -> None:
        super().__init__()
        self.receivers: set[str] = set()

    def _target(self, node: cst.CSTNode) -> None:
        if isinstance(node, cst.Attribute) and node.attr.value == "is_cuda":
            name = dotted_name(node.value)
            if name:
                self.receivers.add(name)
        elif isinstance(node, (cst.Tuple, cst.List)):
            for el in node.elements:
                self._target(el.value)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._target(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._target(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._target(node.target)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if node.name.value == "is_cuda":
            self.receivers.update(("self", "cls"))


#: why the device test replaces `.is_cuda`, per target
REASON = {
    per_target.NEURON: "true for a CUDA tensor as before, and for a Neuron tensor",
    per_target.CPU: "a CPU tensor is not a CUDA tensor",
    per_target.ACCELERATOR: "true for a CUDA tensor as before, and for a Neuron tensor; still false on the CPU and MPS",
}


class IsCudaAttribute(Transform):
    """Finds `x.is_cuda` checks, which are always False on a Neuron tensor.

    What it does:
        Rewrites the tensor attribute `x.is_cuda` to `x.device.type in ("cuda", "neuron")` (on
        the neuron and accelerator targets; `x.device.type == "cpu"` on the CPU target), adding
        parentheses where the comparison needs them (`(x.device.type in (...)) == flag`): a CUDA
        tensor keeps its path and a Neuron tensor takes it too, while a CPU or MPS tensor stays
        off it as before.
        Assignments to `.is_cuda` and classes that define their own `is_cuda` (an attribute
        set on `self` or a method) are left alone; so are f-string fields (reported). A check
        that decides which code runs (an `if` or conditional-expression test, a stored flag) is
        rewritten only when that code just places data or is device-agnostic; when it calls a
        kernel wrapper, imports, or reaches a CUDA-only path (`DataParallel`, fp16, Triton...),
        it is kept and reported: `if x.is_cuda: return fused_cuda_op(x)` must stay off on Neuron.
        A check whose branch only places values where the tensor is (`if x.is_cuda: eye =
        eye.cuda()`, or `.cuda(x.get_device())`) gets that said outright, safely: `if
        x.device.type in ("cuda", "neuron"): eye = eye.to(x.device)`.
        In a file whose `is_cuda` checks choose or feed a CUDA kernel (a `torch.cuda.device(...)`
        context, a kernel language such as Triton, Helion, TileLang or CUTLASS, a
        `kernel[grid](...)` launch, an `is_cuda` line naming a kernel or a fused path), every `is_cuda` is kept and reported, asserts included: the assert that keeps
        other tensors out of the kernel and the check that picks the kernel are one decision (on
        the CPU target, `x.device.type == "cpu"` would send CPU tensors into the CUDA path).

    Why on TorchNeuron:
        A tensor on the Neuron device is not a CUDA tensor, so `is_cuda` is False there and code
        such as `if not x.is_cuda: x = x.cuda()` or `assert x.is_cuda` takes the wrong path.
        Comparing the device type is portable.

    Example:
        if not batch.is_cuda:
            batch = batch.to(device)

    Use instead:
        if not batch.device.type in ("cuda", "neuron"):
            batch = batch.to(device)

    Fix safety:
        Unsafe: the check becomes "is on CUDA or Neuron"; code that used `is_cuda` to mean "is on
        CUDA specifically" (to pick a CUDA kernel) must be reviewed. Safe where the branch only
        places values on the tensor's device: a CUDA tensor's branch places them where it did, a
        CPU tensor still skips it, and a Neuron tensor gets them on its device.
        `x.is_neuron` (added by PyTorch's PrivateUse1 method generator) also works but is not
        documented.

    Evidence:
        INF: the Neuron device is a PrivateUse1 backend named "neuron".
    """

    id = "NRN104"
    name = "is-cuda-attribute"
    safety = Safety.UNSAFE
    evidence = Evidence.INF
    section = "review"
    effort = "low"
    references = ("https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/index.html",)
    tokens = (b"is_cuda",)
    targets = per_target.ALL
    examples = (
        Example("assert x.is_cuda\n", 'assert x.device.type in ("cuda", "neuron")\n'),
        Example("ok = x.is_cuda == expected\n", 'ok = (x.device.type in ("cuda", "neuron")) == expected\n'),
    )

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._user_receivers: set[str] | None = None
        self._kernel_file_found: bool | None = None

    def _kernel_file(self) -> bool:
        """Whether the file's `is_cuda` checks choose or feed a kernel (searched once, when asked)."""
        if self._kernel_file_found is None:
            self._kernel_file_found = bool(_KERNEL_FILE.search(self.ctx.source))
        return self._kernel_file_found

    def _user_defined(self, receiver: cst.BaseExpression) -> bool:
        name = dotted_name(receiver)
        if name is None:
            return False
        if self._user_receivers is None:
            self._user_receivers = set()
            if _DEFINES_IS_CUDA.search(self.ctx.source):  # the walk only where it can find something
                scan = _AssignedIsCuda()
                visit(self.ctx.module, scan)
                self._user_receivers = scan.receivers
        return name in self._user_receivers

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value != "is_cuda":
            return
        if self.ctx.qualify(node) is not None:
            return  # `torch.cuda.is_cuda`-like module attributes are not tensor attributes
        parent = self.ctx.parent
        if isinstance(parent, (cst.AssignTarget, cst.AugAssign, cst.Del)) or (
                isinstance(parent, cst.AnnAssign) and parent.target is node):
            return
        if isinstance(parent, cst.Call) and parent.func is node:
            return  # `obj.is_cuda()`: a method of the user's own class
        if self._user_defined(node.value):
            return
        if any(isinstance(a, cst.FormattedString) for a in self.ctx.ancestors()):
            self.report(node, '`.is_cuda` is False on Neuron tensors: use `x.device.type == "neuron"`')
            return
        kept = "this file's `is_cuda` checks choose or feed a CUDA kernel" if self._kernel_file() else None
        # a branch that only places values where its tensor is changes nothing the code after it sees
        placing = _follows(parent, node, node) is not None and self._only_follows()
        kept = kept or (None if placing else self._guards_cuda_only_code(node))
        if kept is not None:
            self.report(node, f"`{short(node)}` guards code that may be CUDA-only ({kept}): kept, "
                              "False on Neuron keeps that path off; if the path is device-agnostic, "
                              'use `x.device.type == "neuron"` by hand')
            return
        device, imports = per_target.device(self.ctx, parens=True)
        kind = cst.Attribute(value=cst.Attribute(value=node.value, attr=cst.Name("device")), attr=cst.Name("type"))
        comparison = cst.Comparison(left=kind, comparisons=[cst.ComparisonTarget(operator=cst.Equal(), comparator=device)])
        if per_target.target(self.ctx) != per_target.CPU:
            # covers both devices: a CUDA tensor keeps its path, a Neuron one takes it too; false
            # on the CPU and MPS, as before (an accelerator's device would open it on the CPU)
            device, imports = cst.parse_expression('("cuda", "neuron")'), ()
            comparison = cst.Comparison(left=kind, comparisons=[cst.ComparisonTarget(operator=cst.In(), comparator=device)])
        if node.lpar:
            comparison = comparison.with_changes(lpar=node.lpar, rpar=node.rpar)
        elif not isinstance(parent, NO_PARENS) and not (
                isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Not)):
            comparison = comparison.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        code = short(node)
        follows = _follows(parent, node, comparison) \
            if per_target.target(self.ctx) != per_target.CPU and self._only_follows() else None
        if follows is not None and parent is not None:
            self.fix(parent, follows, f"`if {code}:` placing on CUDA -> `if {short(comparison)}:` "
                     f"placing on `{short(node.value)}.device`: what it places follows that tensor on every host",
                     safety=Safety.SAFE, evidence=Evidence.DOC)
            return
        self.fix(node, comparison, f"`{code}` -> `{short(comparison)}`: {REASON[per_target.target(self.ctx)]}",
                 imports=imports)

    def _only_follows(self) -> bool:
        """Every ``is_cuda`` check of the function being visited (or of the module, outside any) is
        the test of a branch that only places values where its tensor is (:func:`_follows`): one
        check kept for CUDA beside it (``if x.is_cuda: y = y.type(torch.cuda.FloatTensor)``) keeps
        the values of the function on the path it chooses."""
        scope = next((a for a in self.ctx.ancestors() if isinstance(a, cst.FunctionDef)), self.ctx.module)
        key = ("is-cuda-checks-follow", id(scope))
        if key not in self.ctx.memo:  # once per function, for every check in it
            checks = following = 0
            for n in iter_syntax(scope):
                checks += isinstance(n, cst.Attribute) and n.attr.value == "is_cuda"
                following += isinstance(n, cst.If) and isinstance(n.test, cst.Attribute) \
                    and n.test.attr.value == "is_cuda" and _follows(n, n.test, n.test) is not None
            self.ctx.memo[key] = checks == following
        return bool(self.ctx.memo[key])

    def _guards_cuda_only_code(self, node: cst.Attribute) -> str | None:
        """What the check switches on, when it is a test (``if``, conditional expression, a stored
        flag) of code that is CUDA-only or that the rule cannot judge (a call into a kernel
        wrapper, an import, ``DataParallel``): such a check is kept, as NRN103 keeps comparisons
        that guard CUDA-only features. None when the guarded code only places data."""
        kind, where = classify(self.ctx, CudaRef(node=node, fn="is_cuda", extra=(), call=None, head=""))
        if where is None:
            return None
        if kind is Context.IF:
            verdict = scan(self.ctx, guarded_code(self.ctx, where)[1:])  # type: ignore[arg-type]
        elif kind is Context.IFEXP:
            assert isinstance(where, cst.IfExp)
            verdict = scan(self.ctx, [where.body, where.orelse])
        elif kind is Context.FLAG:
            verdict = scan(self.ctx, flag_uses(self.ctx, assigned_names(where), where))
        elif kind is Context.SKIP:
            return "a test skip marker"
        else:
            return None
        return verdict.marker or verdict.opaque


def _follows(parent: cst.CSTNode | None, node: cst.Attribute, comparison: cst.BaseExpression) -> cst.If | None:
    """``if t.is_cuda: y = y.cuda()`` (or ``y.cuda(t.get_device())``, or ``return y.cuda()``), with no
    ``else``: ``y`` only follows ``t``, so ``if <t on CUDA or Neuron>: y = y.to(t.device)`` keeps
    every host's path (a CPU tensor still skips it) and gives Neuron its own; None for any other
    use of ``node``."""
    if not (isinstance(parent, cst.If) and parent.test is node and parent.orelse is None
            and isinstance(parent.body, cst.IndentedBlock)):
        return None
    tensor = dotted_name(node.value)
    lines = []
    for line in parent.body.body:
        small = line.body[0] if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 else None
        call = small.value if isinstance(small, (cst.Assign, cst.Return)) else None
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "cuda"
                and _current_device(call, tensor) and (isinstance(small, cst.Return) or (
                    isinstance(small, cst.Assign) and len(small.targets) == 1
                    and dotted_name(small.targets[0].target) == dotted_name(call.func.value) is not None))):
            return None
        moved = call.with_changes(func=call.func.with_changes(attr=cst.Name("to")), args=[cst.Arg(
            cst.Attribute(value=node.value, attr=cst.Name("device")))])
        lines.append(line.with_changes(body=[small.with_changes(value=moved)]))
    return parent.with_changes(test=comparison, body=parent.body.with_changes(body=lines))


def _current_device(call: cst.Call, tensor: str | None) -> bool:
    """``.cuda()`` places on the current device, and ``.cuda(t.get_device())`` on ``t``'s."""
    if not call.args:
        return True
    arg = call.args[0].value
    return len(call.args) == 1 and isinstance(arg, cst.Call) and not arg.args and isinstance(arg.func, cst.Attribute) \
        and arg.func.attr.value == "get_device" and dotted_name(arg.func.value) == tensor is not None
