"""NRN302: dynamic shapes asked of torch.compile (``dynamic=True``, ``mark_dynamic``, Dynamo config)."""

from __future__ import annotations

import re

import libcst as cst

from neuronize.transforms._helpers import per_target
from neuronize.analysis.context import FileContext
from neuronize.transform import Evidence, Example, Safety, Transform
from neuronize.transforms._helpers.calls import keyword
from neuronize.transforms._helpers.compile import DEBUG_BACKENDS, call_name, compile_kind, dynamic_group, host_aware_test
from neuronize.transforms._helpers.device_choice import says_only_neuron
from neuronize.transforms._helpers.device_model import kept_for_cuda
from neuronize.transforms._helpers.imports import removals_for
from neuronize.transforms._helpers.literals import is_false, is_true, string_value
from neuronize.transforms._helpers.messages import short
from neuronize.transforms._helpers.names import local_names
from neuronize.transforms._helpers.nodes import assign_targets, is_expression_statement

MARKERS = frozenset({"mark_dynamic", "maybe_mark_dynamic", "mark_unbacked"})
#: Dynamo settings that ask for symbolic shapes, with the value that keeps shapes static
DYNAMO_SETTINGS = {
    "torch._dynamo.config.automatic_dynamic_shapes": "False",
    "torch._dynamo.config.assume_static_by_default": "True",
    "torch._dynamo.config.dynamic_shapes": "False",
}


#: code whose dynamic dimensions serve something other than Neuron compilation: symbolic tracing,
#: `make_fx`, FX graph passes, AOT export, eager/aot_eager test backends, Inductor passes
NOT_FOR_NEURON = re.compile(rb"make_fx|symbolic_trace|torch\.export|torch\._export|_inductor|torch\.fx\b|"
                            rb"GraphModule|aot_function|aot_module|aot_export|"
                            rb"""backend\s*=\s*["'](?:eager|aot_eager)""")

#: a TorchScript trace, and a compile (whose Dynamo reads the marks; not a regular expression's)
_TRACED_ONLY = re.compile(rb"\bjit\.trace(?:_module)?\s*\(")
_COMPILES = re.compile(rb"(?<!\bre\.)\bcompile\s*\(")


class CompileDynamicShapes(Transform):
    """Finds requests for dynamic (symbolic) shapes in compiled code, which Neuron does not support.

    What it does:
        Rewrites `dynamic=True` in `torch.compile(...)`, `@torch.compile(...)` and
        `model.compile(...)` to `dynamic=False`. Removes `torch._dynamo.mark_dynamic(...)`,
        `maybe_mark_dynamic(...)` and `mark_unbacked(...)` statements (and their imports once
        unused). Reports a `dynamic=` chosen at run time, those calls used as values, and Dynamo
        settings that turn symbolic shapes on (`torch._dynamo.config.automatic_dynamic_shapes =
        True`, `assume_static_by_default = False`). A missing `dynamic=` is NRN301's: it adds
        `dynamic=False` as part of migrating the call. Left alone: compiles with an explicit
        `"eager"`/`"aot_eager"` test backend; markers in files that trace symbolically (`make_fx`,
        `symbolic_trace`, `torch.export`) or drive Inductor (reported: the dynamic dimension is the
        point there); markers in a file that traces with TorchScript (`torch.jit.trace`) and
        compiles nothing, where no Dynamo reads them; a marker that is the only statement of a
        loop, `with` or `try` body is reported, not removed (no `for ...: pass` is left behind).
        Where the call's backend is host-aware (NRN301 writes, or already wrote, `backend="neuron"
        if on_neuron() else "inductor"`: in a file that also runs without Neuron, at import time,
        and under `--target accelerator`), only Neuron gets static shapes: `dynamic=False if
        on_neuron() else True`, with the backend's own test, so the other hosts keep their dynamic
        shapes. Likewise a marker in a file whose compiles keep hosts other than Neuron (a CPU
        path, or `--target accelerator`) is kept for them, under `if not on_neuron():`.

    Why on TorchNeuron:
        The Neuron backend compiles static shapes only: `dynamic=True` is rejected at compile time,
        and every new input shape compiles a new graph (minutes for a large model).

    Example:
        model = torch.compile(model, backend="neuron", dynamic=True)
        torch._dynamo.mark_dynamic(batch, 0)

    Use instead:
        model = torch.compile(model, backend="neuron", dynamic=False)
        # pad inputs to a fixed length, or to a few buckets

        # where the backend is host-aware:
        model = torch.compile(model, backend="neuron" if on_neuron() else "inductor",
                              dynamic=False if on_neuron() else True)
        if not on_neuron():
            torch._dynamo.mark_dynamic(batch, 0)

    Fix safety:
        Unsafe: the code then compiles once per distinct input shape (on Neuron only, where the
        call is host-aware). Inputs whose shapes vary (variable sequence lengths, last partial
        batch) must be padded or bucketed, or compile time dominates. Removing `mark_dynamic`
        rests on an inference (INF).

    Evidence:
        DOC: the compile reference and guide (`dynamic=True` is rejected; use `dynamic=False` or
        omit it; every new shape compiles a new graph). INF: `mark_dynamic` calls and the Dynamo
        config settings.
    """

    id = "NRN302"
    name = "compile-dynamic-shapes"
    safety = Safety.UNSAFE
    evidence = Evidence.DOC
    section = "compile"
    references = (
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/compile/reference-torch-compile.html",
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/compile/how-to-optimize-with-torch-compile.html",
    )
    tokens = (b"dynamic=", b"dynamic =", b"mark_dynamic", b"mark_unbacked", b"automatic_dynamic", b"assume_static_by_default")
    #: the same edit on every `--target` (it names no device)
    targets = per_target.ALL
    examples = (
        Example(
            'import torch\nmodel = torch.compile(model, backend="neuron", dynamic=True)\n',
            'import torch\nmodel = torch.compile(model, backend="neuron", dynamic=False)\n',
        ),
        Example(
            'import torch\ndef build(model, device="cpu"):\n    return torch.compile(model.to(device), dynamic=True)\n',
            'import torch\ndef build(model, device="cpu"):\n    return torch.compile(model.to(device), dynamic=False '
            'if hasattr(torch, "accelerator") and '
            'torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "neuron" '
            "else True)\n",
        ),
        Example(
            "import torch\ntorch._dynamo.mark_dynamic(x, 1)\ny = model(x.cuda())\n",
            ('import torch\n'
                'if not (hasattr(torch, "accelerator") and torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "neuron"):\n'
                '    torch._dynamo.mark_dynamic(x, 1)\n'
                'y = model(x.cuda())\n'),
        ),
        Example(
            "import torch\ntorch._dynamo.mark_dynamic(x, 1)\ny = model(x)\n",
            "import torch\nif not (hasattr(torch, \"accelerator\") and "
            "torch.accelerator.is_available() and torch.accelerator.current_accelerator().type "
            '== "neuron"):\n    torch._dynamo.mark_dynamic(x, 1)\ny = model(x)\n',
        ),
        Example("import torch\ntorch._dynamo.config.automatic_dynamic_shapes = True\n"),
        # the marks feed a TorchScript trace, which ignores them: nothing to migrate
        Example("import torch\ntorch._dynamo.mark_dynamic(x, 0)\ntraced = torch.jit.trace(model, x)\n", finds=False),
    )

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._aliases = local_names(ctx, ("torch.compile",))

    def visit_Call(self, node: cst.Call) -> None:
        name = call_name(node.func, self._aliases)
        if name == "compile":
            self._compile(node)
        elif name in MARKERS:
            self._marker(node, name)

    def _compile(self, node: cst.Call) -> None:
        arg = keyword(node, "dynamic")
        if arg is None or is_false(arg.value):
            return
        if isinstance(arg.value, cst.Name) and arg.value.value == "None":
            return
        if isinstance(arg.value, cst.IfExp) and is_false(arg.value.body) and says_only_neuron(arg.value.test):
            return  # `False if <Neuron> else ...`: static on Neuron already (a host-aware call)
        kind = compile_kind(self.ctx, node)
        if kind is None:
            return
        backend = keyword(node, "backend")
        if backend is not None and string_value(backend.value) in DEBUG_BACKENDS:
            return  # an eager/aot_eager test compile: not one this tool targets
        what = "`torch.compile`" if kind == "torch" else f"`{short(node.func, 50)}`"
        evidence = Evidence.DOC if kind == "torch" else Evidence.INF
        host = host_aware_test(self.ctx, node) if is_true(arg.value) else None
        if host is not None:  # the other hosts keep their dynamic shapes; Neuron compiles static ones
            test, imports = host
            self.fix(arg.value, cst.IfExp(test=test, body=cst.Name("False"), orelse=arg.value),
                     f"{what}: `dynamic=True` -> `dynamic=False` on Neuron only (`False if <the accelerator is "
                     "Neuron> else True`, as its backend is host-aware): Neuron rejects dynamic shapes; there "
                     "each new input shape compiles a new graph, so pad inputs to fixed sizes or buckets",
                     evidence=evidence, imports=imports, group=dynamic_group(node))
        elif is_true(arg.value):
            self.fix(arg.value, cst.Name("False"),
                     f"{what}: `dynamic=True` -> `dynamic=False`: Neuron rejects dynamic shapes; each new "
                     "input shape now compiles a new graph, so pad inputs to fixed sizes or buckets",
                     evidence=evidence, group=dynamic_group(node))
        else:
            self.report(arg.value, f"{what}: `dynamic={short(arg.value, 50)}` is chosen at run time: Neuron "
                        "rejects `dynamic=True`; use `False` (or omit it) and pad inputs to fixed sizes")

    def _marker(self, node: cst.Call, name: str) -> None:
        qualified = self.ctx.qualify(node.func)
        if qualified is None or not qualified.startswith("torch._dynamo."):
            return
        if _TRACED_ONLY.search(self.ctx.source) and not _COMPILES.search(self.ctx.source):
            return  # its tensors feed a TorchScript trace, which reads no Dynamo marks: inert everywhere
        if NOT_FOR_NEURON.search(self.ctx.source):
            self.report(node, f"`{short(node.func, 50)}(...)` left: this file traces or compiles with something "
                        "other than the Neuron backend (symbolic tracing, `make_fx`, eager/aot_eager test "
                        "backends, Inductor passes), where the dynamic dimension is the point",
                        evidence=Evidence.INF)
            return
        statement = self.ctx.parent if is_expression_statement(self.ctx) else None
        line = self.ctx.statement_to_remove(statement) if statement is not None else None
        if self._kept_off_neuron():
            return  # `if not <Neuron>: <marker>`: kept for the other hosts already
        if isinstance(line, cst.SimpleStatementLine) and per_target.target(self.ctx) != per_target.CPU:
            new, imports = kept_for_cuda(self.ctx, line)  # the other hosts' Inductor keeps the dimension
            self.fix(line, new, f"`{short(node.func, 50)}(...)` kept for the other hosts under `if not <the "
                     "accelerator is Neuron>:` (this file's compiles keep them): Neuron compiles static shapes "
                     "only; pad this input to a fixed size (or a few buckets) there", evidence=Evidence.INF,
                     imports=imports)
        elif statement is not None and not self._empties_a_loop():
            self.remove(statement, f"`{short(node.func, 50)}(...)` removed: Neuron compiles static shapes "
                        "only; pad this input to a fixed size (or a few buckets) instead",
                        evidence=Evidence.INF, imports=removals_for(self.ctx, [qualified]))
        else:
            self.report(node, f"`{short(node.func, 50)}(...)` asks for a dynamic dimension, which Neuron does not "
                        "support: remove it and pad the input to a fixed size", evidence=Evidence.INF)

    def _kept_off_neuron(self) -> bool:
        """The node being visited runs under ``if not <Neuron>:`` (what :func:`kept_for_cuda` writes)."""
        return any(isinstance(anc, cst.If) and isinstance(anc.test, cst.UnaryOperation)
                   and isinstance(anc.test.operator, cst.Not) and says_only_neuron(anc.test.expression)
                   for anc in self.ctx.ancestors())

    def _empties_a_loop(self) -> bool:
        """The marker is the only statement of a loop, `with` or `try` body (``for t in ts:
        mark_dynamic(t, 0)``): removing it would leave an empty block (``pass``)."""
        ancestors = list(self.ctx.ancestors())
        for i, anc in enumerate(ancestors[:-1]):
            if isinstance(anc, cst.IndentedBlock):
                owner = ancestors[i + 1]
                return len(anc.body) == 1 and not isinstance(owner, (cst.If, cst.Else, cst.FunctionDef))
        return False

    def visit_Assign(self, node: cst.Assign) -> None:
        self._setting(node)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._setting(node)

    def _setting(self, node: cst.Assign | cst.AugAssign) -> None:
        for target in assign_targets(node):
            if not isinstance(target, cst.Attribute) or target.attr.value not in (
                "automatic_dynamic_shapes", "assume_static_by_default", "dynamic_shapes"
            ):
                continue
            qualified = self.ctx.qualify(target)
            static = DYNAMO_SETTINGS.get(qualified or "")
            if static is None:
                continue
            value = node.value
            if isinstance(value, cst.Name) and value.value == static:
                continue
            self.report(node, f"`{short(target, 50)} = {short(value, 50)}` lets Dynamo trace symbolic shapes, which "
                        f"the Neuron backend does not compile: set it to `{static}` (or remove it)",
                        evidence=Evidence.INF)
            return
