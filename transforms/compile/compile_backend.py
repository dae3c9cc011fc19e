"""NRN301: `torch.compile` set up for Inductor/CUDA -> `backend="neuron"` (host-aware where other hosts keep Inductor)."""

from __future__ import annotations

import libcst as cst

from neuronize.analysis.context import FileContext
from neuronize.transform import Evidence, Example, Safety, Transform
from neuronize.transforms._helpers.calls import new_keyword, keyword
from neuronize.transforms._helpers.compile import (
    STATIC_REASON, call_name, compile_kind, cuda_chosen_backend, dynamic_group, plan_compile, plan_optimize)
from neuronize.transforms._helpers.device_model import KeepsCudaBranches, choice_edit_group
from neuronize.transforms._helpers.messages import short
from neuronize.transforms._helpers.names import last_name, local_names
from neuronize.transforms._helpers import hosts, per_target
from neuronize.transforms._helpers.literals import string_value

#: functions whose compiled form only Inductor provides (their `torch.compile` is left alone)
INDUCTOR_ONLY = frozenset({"flex_attention", "create_block_mask"})

#: why the decorator gets a backend, per target (the others say it in `compile_backend`)
WHY_BACKEND = {
    per_target.NEURON: " (the default backend, Inductor, emits CUDA/Triton kernels)",
    per_target.ACCELERATOR: "",
    per_target.CPU: "",
}


class CompileBackend(KeepsCudaBranches, Transform):
    """Finds `torch.compile` calls and decorators that compile with Inductor, CUDA's default backend.

    What it does:
        At every `torch.compile(...)`, `@torch.compile`, `@torch.compile(...)` and
        `model.compile(...)` (the `nn.Module` method) it sets `backend="neuron"` (added when
        absent, replacing `"inductor"` or `"cudagraphs"`), removes the CUDA-only modes
        `mode="reduce-overhead"`, `"max-autotune"` and `"max-autotune-no-cudagraphs"`, and removes
        the Inductor keys of a literal `options={...}` dict (the Neuron keys `fallback_execution`
        and `model_name` are kept). All changes to one call are one finding, and its message lists
        each change. `torch._dynamo.optimize("inductor")` gets `"neuron"` too.
        A backend the program chooses by asking for CUDA (`backend="inductor" if
        torch.cuda.is_available() else "aot_eager"`) gains a Neuron arm in front, the choice kept
        whole for the other hosts (`"neuron" if <the accelerator is Neuron> else <the choice>`).
        Reported, not changed: any other backend, mode or options chosen at run time, compile
        settings passed through `**kwargs`, debugging backends (`"eager"`, `"aot_eager"`), unknown
        backends, and `torch.compile` passed around as a value (`functools.partial(torch.compile, ...)`).
        A call that already says `backend="neuron"` is left exactly as it is.
        `fullgraph=True` is not inserted: with graph breaks in the model it turns a working
        compile into an error. The message suggests it instead. `dynamic=False` is added where
        the call says nothing about `dynamic` (NRN302 turns a `dynamic=True` into `False`).
        On the `neuron` target the backend is host-aware, so that every host the code ran on keeps
        its compile
        (`"neuron" if hasattr(torch, "accelerator") and torch.accelerator.is_available() and
        torch.accelerator.current_accelerator().type == "neuron" else "inductor"`, or the original backend on the other side; the module
        names the test once, as `on_neuron()`).
        A compile inside a block kept for CUDA (the body of `if torch.cuda.is_available():`
        around CUDA-only calls) stays as it is and is reported: it never runs on Trainium. A host-aware call keeps what the other hosts' Inductor
        reads: its CUDA `mode=` stays (Neuron ignores it with a warning and uses the default
        mode), Inductor `options={...}` are passed only off Neuron (`options=None if on_neuron()
        else {...}`, `None` being `torch.compile`'s default), and no `dynamic=False` is added
        (omitting `dynamic` is allowed on Neuron and keeps every other host as it was). A dict
        mixing Neuron and Inductor keys in a host-aware call is reported, not changed.
        Compiles of `flex_attention` and `create_block_mask` (whose compiled form only Inductor
        provides) are reported, not changed.
        `--target accelerator` writes the backend chosen from the detected device
        (`"neuron" if torch.accelerator.is_available() and torch.accelerator.current_accelerator().type
        == "neuron" else "inductor"`), host-aware like the above; `--target cpu` sets no backend
        (Inductor compiles for the CPU), keeps `backend="inductor"`, and drops the CUDA modes and
        Inductor options.

    Why on TorchNeuron:
        The Neuron backend lowers Dynamo graphs through StableHLO to neuronx-cc; TorchInductor and
        its Triton/CUDA kernels are not used. Neuron honours only the default `mode` (other values
        log a warning and fall back) and reads only a few `options` keys.

    Example:
        # a script written for CUDA
        model = torch.compile(model.cuda(), mode="max-autotune")

        # a file that also runs without CUDA (a CPU path)
        compiled = torch.compile(model, mode="max-autotune", options={"epilogue_fusion": True})

    Use instead:
        model = torch.compile(model.cuda(), mode="max-autotune",
                              backend="neuron" if on_neuron() else "inductor")

        compiled = torch.compile(
            model,
            mode="max-autotune",
            options=None if on_neuron() else {"epilogue_fusion": True},
            backend="neuron" if on_neuron() else "inductor",
        )

    Fix safety:
        Safe for `torch.compile` and `torch._dynamo.optimize`: the documented backend, and the
        removed settings have no effect on Neuron; `torch.compile` looks the backend up when it
        builds the wrapper, so the host-aware backend keeps Inductor, with its mode and options,
        on every other host. Unsafe for
        `model.compile(...)`: that the `nn.Module` method forwards its arguments unchanged is
        inferred (and a `.compile` method on another kind of object would be a false match). A
        backend chosen by host joins the file's device choice when that gains Neuron through edits
        (a detection, a dispatch): it is applied with them or not at all, so a Neuron backend never
        compiles a model that a held device choice left on the CPU.

    Evidence:
        DOC: the TorchNeuron compile reference and guide (the `"neuron"` backend; only the default
        `mode`, other values logging a warning and falling back to it; `dynamic=False` or no
        `dynamic`; the `options` keys it reads, `model_name` being 3P; `fullgraph=True`
        recommended). INF: that `model.compile` forwards its arguments.
    """

    id = "NRN301"
    name = "compile-backend"
    safety = Safety.SAFE
    evidence = Evidence.DOC
    section = "compile"
    references = (
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/index.html",
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/compile/reference-torch-compile.html",
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/compile/how-to-optimize-with-torch-compile.html",
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/reference/env-vars.html",
    )
    tokens = (b"torch.compile", b".compile(", b"_dynamo")
    targets = per_target.ALL
    examples = (
        Example("import torch\ndef build(model):\n    return torch.compile(model.cuda())\n",
                ('import torch\n'
                'def build(model):\n'
                '    return torch.compile(model.cuda(), backend="neuron" if hasattr(torch, "accelerator") and torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "neuron" else "inductor")\n')),
        Example(
            'import torch\ndef build(model):\n    model.cuda()\n'
            '    return torch.compile(model, backend="inductor", mode="max-autotune", fullgraph=True)\n',
            ('import torch\n'
                'def build(model):\n'
                '    model.cuda()\n'
                '    return torch.compile(model, backend="neuron" if hasattr(torch, "accelerator") and torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "neuron" else "inductor", mode="max-autotune", fullgraph=True)\n'),
        ),
        Example(
            "import torch\n@torch.compile\ndef f(x):\n    return x.cuda() + 1\n",
            'import torch\n@torch.compile(backend="neuron" if hasattr(torch, "accelerator") and '
            'torch.accelerator.is_available() and '
            'torch.accelerator.current_accelerator().type == "neuron" else "inductor")\n'
            "def f(x):\n    return x.cuda() + 1\n",
        ),
        Example(
            'import torch\ndef build(model, device="cpu"):\n'
            '    return torch.compile(model.to(device), mode="max-autotune", options={"shape_padding": True})\n',
            'import torch\ndef build(model, device="cpu"):\n'
            '    return torch.compile(model.to(device), mode="max-autotune", options=None if '
            'hasattr(torch, "accelerator") and '
            'torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "neuron" '
            'else {"shape_padding": True}, backend="neuron" if hasattr(torch, "accelerator") and '
            'torch.accelerator.is_available() and '
            'torch.accelerator.current_accelerator().type == "neuron" else "inductor")\n',
        ),
        Example(
            'import torch\ndef build(model):\n    model.cuda().compile(mode="reduce-overhead")\n',
            ('import torch\n'
                'def build(model):\n'
                '    model.cuda().compile(mode="reduce-overhead", backend="neuron" if hasattr(torch, "accelerator") and torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "neuron" else "inductor")\n'),
        ),
        Example("import torch\ncompiled = torch.compile(model, backend=args.backend)\n"),
        Example("import torch\nfrom torch.nn.attention.flex_attention import flex_attention\n"
                "flex = torch.compile(flex_attention)\n"),
    )

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._aliases = local_names(ctx, ("torch.compile",))

    # -- calls ---------------------------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        name = call_name(func, self._aliases)
        if name == "compile":
            kind = compile_kind(self.ctx, node)
            if kind is not None:
                self._compile(node, kind)
        elif name == "optimize" and self.ctx.qualify(func) in (
            "torch._dynamo.optimize", "torch._dynamo.eval_frame.optimize"
        ):
            self._optimize(node)

    def _compile(self, node: cst.Call, kind: str) -> None:
        what = "`torch.compile(...)`" if kind == "torch" else f"`{short(node.func, 50)}(...)`"
        compiled = node.args[0].value if node.args and node.args[0].keyword is None else None
        if compiled is not None and last_name(compiled) in INDUCTOR_ONLY:
            self.report(node, f"{what} of `{last_name(compiled)}`: its compiled form exists only with "
                        "Inductor; left as is (use the eager function on Neuron, or port by hand)")
            return
        unsafe = kind == "module"
        extra = {} if not unsafe else {"safety": Safety.UNSAFE, "evidence": Evidence.INF}
        backend_arg = keyword(node, "backend")
        original = backend_arg.value if backend_arg is not None and (
            string_value(backend_arg.value) or cuda_chosen_backend(self.ctx, backend_arg.value)) else None
        chosen = hosts.host_compile_backend(self.ctx, original)
        backend, imports = chosen if chosen is not None else (None, ())
        plan = plan_compile(node, what, per_target.target(self.ctx), backend, extra.get("evidence"))  # type: ignore[arg-type]
        for where, text, evidence in plan.reports:
            self.report(where, text, evidence=evidence)
        if plan.new is None:
            return
        message = per_target.say(self.ctx, "{what} for {platform}: ", what=what) + "; ".join(plan.edits)
        message += self._host_note(backend)
        if plan.dropped_comments:
            message += f"; {plan.dropped_comments} comment(s) on the removed settings dropped"
        if keyword(node, "fullgraph") is None:
            message += "; consider `fullgraph=True` (recommended: graph breaks then raise)"
        if unsafe:
            message += "; assumes the receiver is an `nn.Module`"
        aware = isinstance(backend, cst.IfExp)  # chosen by host: it moves with the file's device choice
        group = dynamic_group(node) or (choice_edit_group(self.ctx) if aware else None)
        self.fix(node, plan.new, message, imports=imports, group=group, **extra)

    def _host_note(self, backend: cst.BaseExpression | None) -> str:
        """What a host-aware backend means (the neuron target writes one where `"neuron"` would
        raise on a host this code runs on)."""
        if per_target.target(self.ctx) != per_target.NEURON or not isinstance(backend, cst.IfExp):
            return ""
        return ('; only where Neuron is present: the wrapper is built at import time or the file also '
                'runs without Neuron, and `torch.compile` looks the backend up when it builds the wrapper '
                '(`"neuron"` raises elsewhere)')

    def _optimize(self, node: cst.Call) -> None:
        chosen = per_target.compile_backend(self.ctx)
        backend, imports = chosen if chosen is not None else (None, ())
        plan = plan_optimize(node, per_target.target(self.ctx), backend)
        for where, text, _ in plan.reports:
            self.report(where, text)
        if plan.fix is not None:
            where, replacement, message = plan.fix
            self.fix(where, replacement, message, imports=imports)

    # -- bare decorator and references ------------------------------------------------------------
    def visit_Decorator(self, node: cst.Decorator) -> None:
        dec = node.decorator
        if not (isinstance(dec, (cst.Name, cst.Attribute)) and self.ctx.qualify(dec) == "torch.compile"):
            return
        chosen = hosts.host_compile_backend(self.ctx, None)  # None: --target cpu keeps Inductor
        args = [] if chosen is None else [new_keyword("backend", chosen[0])]
        static = chosen is None or not isinstance(chosen[0], cst.IfExp)  # host-aware: dynamic left to each host
        if static:
            args.append(new_keyword("dynamic", cst.Name("False")))
        backend = per_target.say(self.ctx, "{compile_backend}{why}", why=WHY_BACKEND[per_target.target(self.ctx)]) \
            + self._host_note(chosen[0]) if chosen is not None else \
            "no backend (Inductor, the default, compiles for the CPU)"
        self.fix(dec, cst.Call(func=dec, args=[*(a.with_changes(comma=cst.Comma(
                     whitespace_after=cst.SimpleWhitespace(" "))) for a in args[:-1]), args[-1]]),
                 f"`@torch.compile` -> `@torch.compile(...)`: {backend}; "
                 + (f"`dynamic=False` ({STATIC_REASON}); " if static else "")
                 + "consider `fullgraph=True` (recommended: graph breaks then raise)",
                 imports=chosen[1] if chosen is not None else ())

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value == "compile":
            self._reference(node)

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self._aliases:
            self._reference(node)

    def _reference(self, node: cst.CSTNode) -> None:
        parent = self.ctx.parent
        if isinstance(parent, cst.Call) and parent.func is node:
            return
        if isinstance(parent, (cst.Decorator, cst.Attribute, cst.ImportAlias, cst.ImportFrom, cst.AsName)):
            return
        if self.ctx.qualify(node) != "torch.compile":
            return
        self.report(node, "`torch.compile` is passed as a value: wherever it is called, give it "
                    '`backend="neuron"` and no CUDA `mode=`')
