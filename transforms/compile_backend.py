"""NRN301: `torch.compile` set up for Inductor/CUDA -> `backend="neuron"`, without CUDA modes or Inductor options."""

from __future__ import annotations

import libcst as cst

from neuronize.transform import Evidence, Example, Safety, Transform
from neuronize.transforms._calls import new_keyword, double_star_arg, drop_elements, keyword, with_keyword
from neuronize.transforms._compile import call_name, compile_kind
from neuronize.transforms._literals import make_string, string_value
from neuronize.transforms._messages import short
from neuronize.transforms._names import local_names
from neuronize.transforms import _target

STATIC_REASON = "static shapes: Neuron compiles one graph per input shape and rejects `dynamic=True`"


#: what a missing backend means under each target (the default backend, Inductor, emits CUDA/Triton kernels...)
ON_CUDA = {
    _target.NEURON: "",
    _target.ACCELERATOR: " on CUDA and does not compile for Neuron",
    _target.CPU: " on CUDA and does not compile for Neuron",
}
#: why the decorator gets a backend, per target (the others say it in `compile_backend`)
WHY_BACKEND = {
    _target.NEURON: " (the default backend, Inductor, emits CUDA/Triton kernels)",
    _target.ACCELERATOR: "",
    _target.CPU: "",
}
#: backends whose code runs only on NVIDIA GPUs (or only under Inductor): replaced
REPLACED_BACKENDS = frozenset({"inductor", "cudagraphs"})
#: device-agnostic debugging backends: left, with a note
DEBUG_BACKENDS = frozenset({"eager", "aot_eager", "aot_eager_decomp_partition", "aot_eager_default_partitioner"})
#: `mode=` values that only mean something to Inductor on CUDA
CUDA_MODES = frozenset({"reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"})
#: `options=` keys the Neuron backend reads (fallback_execution: DOC; model_name: 3P)
NEURON_OPTIONS = frozenset({"fallback_execution", "model_name"})


class CompileBackend(Transform):
    """Finds `torch.compile` calls and decorators that compile with Inductor, CUDA's default backend.

    What it does:
        At every `torch.compile(...)`, `@torch.compile`, `@torch.compile(...)` and
        `model.compile(...)` (the `nn.Module` method) it sets `backend="neuron"` (added when
        absent, replacing `"inductor"` or `"cudagraphs"`), removes the CUDA-only modes
        `mode="reduce-overhead"`, `"max-autotune"` and `"max-autotune-no-cudagraphs"`, and removes
        the Inductor keys of a literal `options={...}` dict (the Neuron keys `fallback_execution`
        and `model_name` are kept). All changes to one call are one finding, and its message lists
        each change. `torch._dynamo.optimize("inductor")` gets `"neuron"` too.
        Reported, not changed: a backend, mode or options chosen at run time (a variable), compile
        settings passed through `**kwargs`, debugging backends (`"eager"`, `"aot_eager"`), unknown
        backends, and `torch.compile` passed around as a value (`functools.partial(torch.compile, ...)`).
        A call that already says `backend="neuron"` is left exactly as it is.
        `fullgraph=True` is not inserted: with graph breaks in the model it turns a working
        compile into an error. The message suggests it instead. `dynamic=False` is added where
        the call says nothing about `dynamic` (NRN302 turns a `dynamic=True` into `False`).
        `--target accelerator` writes the backend chosen from the detected device
        (`"neuron" if torch.accelerator.is_available() and torch.accelerator.current_accelerator().type
        == "neuron" else "inductor"`); `--target cpu` sets no backend (Inductor compiles for the
        CPU) and keeps `backend="inductor"`. Both drop the CUDA modes and Inductor options too.

    Why on TorchNeuron:
        The Neuron backend lowers Dynamo graphs through StableHLO to neuronx-cc; TorchInductor and
        its Triton/CUDA kernels are not used. Neuron honours only the default `mode` (other values
        log a warning and fall back) and reads only a few `options` keys.

    Example:
        model = torch.compile(model, mode="max-autotune")

        @torch.compile
        def step(x):
            return x * 2

    Use instead:
        model = torch.compile(model, backend="neuron", dynamic=False)

        @torch.compile(backend="neuron", dynamic=False)
        def step(x):
            return x * 2

    Fix safety:
        Safe for `torch.compile` and `torch._dynamo.optimize`: the documented backend, and the
        removed settings have no effect on Neuron. Unsafe for `model.compile(...)`: that the
        `nn.Module` method forwards its arguments unchanged is inferred (and a `.compile` method
        on another kind of object would be a false match).

    Evidence:
        DOC: the TorchNeuron compile reference and guide (the `"neuron"` backend; only the default
        `mode`; `dynamic=False`; the `options` keys it reads, `model_name` being 3P;
        `fullgraph=True` recommended). INF: that `model.compile` forwards its arguments.
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
    targets = _target.ALL
    examples = (
        Example("import torch\nmodel = torch.compile(model)\n",
                'import torch\nmodel = torch.compile(model, backend="neuron", dynamic=False)\n'),
        Example(
            'import torch\nmodel = torch.compile(model, backend="inductor", mode="max-autotune", fullgraph=True)\n',
            'import torch\nmodel = torch.compile(model, backend="neuron", fullgraph=True, dynamic=False)\n',
        ),
        Example(
            "import torch\n@torch.compile\ndef f(x):\n    return x + 1\n",
            'import torch\n@torch.compile(backend="neuron", dynamic=False)\ndef f(x):\n    return x + 1\n',
        ),
        Example(
            'import torch\nmodel.compile(mode="reduce-overhead")\n',
            'import torch\nmodel.compile(backend="neuron", dynamic=False)\n',
        ),
        Example("import torch\ncompiled = torch.compile(model, backend=args.backend)\n"),
    )

    def __init__(self, ctx) -> None:  # type: ignore[no-untyped-def]
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
        unsafe = kind == "module"
        extra = {} if not unsafe else {"safety": Safety.UNSAFE, "evidence": Evidence.INF}
        backend_arg = keyword(node, "backend")
        stars = double_star_arg(node)
        edits: list[str] = []
        remove: list[cst.Arg] = []
        dropped_comments = 0
        backend_known = True  # the backend is (or becomes) a literal we understand
        runtime_backend = False  # the backend is chosen at run time: the call is reported, not edited
        target_backend = _target.compile_backend(self.ctx)  # None: keep the default
        backend_new, backend_imports = target_backend if target_backend is not None else (None, ())
        if backend_arg is None:
            if stars is not None:
                self.report(node, f"{what} takes its settings from `{short(stars, 50)}`: make sure they "
                            'say `backend="neuron"` and no CUDA `mode=` or Inductor `options=`',
                            evidence=extra.get("evidence"))
                return
            if backend_new is not None:
                edits.append(_target.say(self.ctx, "{compile_backend} added (the default backend, Inductor, "
                                         "emits CUDA/Triton kernels{on_cuda})", on_cuda=ON_CUDA[_target.target(self.ctx)]))
        else:
            value = string_value(backend_arg.value)
            if value == "neuron":
                return
            if value is None and _target.target(self.ctx) != _target.NEURON \
                    and "current_accelerator" in self.ctx.module.code_for_node(backend_arg.value):
                return  # chosen from the detected device already (`--target accelerator`)
            if value is None:
                also = [k for k in ("mode", "options") if keyword(node, k) is not None]
                tail = " with no CUDA `mode=` or Inductor `options=`" if also else ""
                self.report(backend_arg.value, f"{what} picks its backend at run time "
                            f"(`backend={short(backend_arg.value, 50)}`): make sure it is `\"neuron\"` on Trainium{tail}")
                backend_known = False
                runtime_backend = True
            elif value in DEBUG_BACKENDS:
                self.report(backend_arg.value, f'{what} uses the debugging backend `"{value}"` (runs on any '
                            'device, without compiling for Neuron): switch to `backend="neuron"` when done')
                return
            elif value not in REPLACED_BACKENDS:
                self.report(backend_arg.value, f'{what} uses the backend `"{value}"`, which is not '
                            'available on Trainium: use `backend="neuron"`')
                return
            elif backend_new is None:
                if value == "cudagraphs":
                    remove.append(backend_arg)
                    edits.append('`backend="cudagraphs"` removed (CUDA graphs); the default backend, '
                                 "Inductor, compiles for the CPU")
                backend_known = False  # `backend="inductor"` is the CPU's backend: kept
            else:
                edits.append(_target.say(self.ctx, '`backend="{value}"` -> {compile_backend}', value=value))

        mode_arg = keyword(node, "mode")
        if mode_arg is not None:
            mode = string_value(mode_arg.value)
            if mode in CUDA_MODES:
                remove.append(mode_arg)
                edits.append(f'`mode="{mode}"` removed (CUDA graphs / Triton autotuning; Neuron honours '
                             "only the default mode)")
            elif mode is None and backend_known and not (
                    isinstance(mode_arg.value, cst.Name) and mode_arg.value.value == "None"):
                self.report(mode_arg.value, f"{what} picks `mode={short(mode_arg.value, 50)}` at run time: Neuron "
                            "honours only the default mode; CUDA modes are ignored with a warning")

        options_arg = keyword(node, "options")
        new_options: cst.Dict | None = None
        if options_arg is not None and backend_known:
            value_node = options_arg.value
            if isinstance(value_node, cst.Dict):
                keys: list[str | None] = []
                for element in value_node.elements:
                    keys.append(string_value(element.key) if isinstance(element, cst.DictElement) else None)
                if None in keys:
                    self.report(value_node, f"{what}: `options=` has keys computed at run time: keep only "
                                "`fallback_execution` (Neuron does not read Inductor options)")
                else:
                    dropped = [k for k in keys if k not in NEURON_OPTIONS]
                    kept = [e for e, k in zip(value_node.elements, keys) if k in NEURON_OPTIONS]
                    listing = ", ".join(f"`{k}`" for k in dropped)
                    if not kept:
                        remove.append(options_arg)
                        edits.append(f"Inductor `options=` removed ({listing or 'empty'})")
                    elif dropped:
                        gone = [e for e in value_node.elements if not any(e is k for k in kept)]
                        elements, lost, closing = drop_elements(value_node.elements, gone,
                                                                value_node.rbrace.whitespace_before)
                        dropped_comments += lost
                        new_options = value_node.with_changes(
                            elements=elements, rbrace=value_node.rbrace.with_changes(whitespace_before=closing))
                        edits.append(f"Inductor options {listing} removed from `options=`")
            elif not (isinstance(value_node, cst.Name) and value_node.value == "None"):
                self.report(value_node, f"{what}: `options={short(value_node, 50)}` is built elsewhere: Neuron "
                            "reads only `fallback_execution`; drop the Inductor keys")

        add_static = not runtime_backend and keyword(node, "dynamic") is None
        if add_static:
            edits.append(f"`dynamic=False` added ({STATIC_REASON})")
        if not edits:
            return
        new = node
        if remove:
            args, lost, _ = drop_elements(node.args, remove)
            dropped_comments += lost
            new = node.with_changes(args=args)
        if new_options is not None:
            new = new.with_changes(args=[
                a.with_changes(value=new_options) if a.keyword is not None and a.keyword.value == "options" else a
                for a in new.args
            ])
        if backend_known and backend_new is not None:
            like = backend_arg.value if backend_arg is not None else None
            if isinstance(backend_new, cst.SimpleString):
                backend_new = make_string("neuron", like)
            new = with_keyword(new, "backend", backend_new)
        if add_static:
            new = with_keyword(new, "dynamic", cst.Name("False"))
        message = _target.say(self.ctx, "{what} for {platform}: ", what=what) + "; ".join(edits)
        if dropped_comments:
            message += f"; {dropped_comments} comment(s) on the removed settings dropped"
        if keyword(node, "fullgraph") is None:
            message += "; consider `fullgraph=True` (recommended: graph breaks then raise)"
        if unsafe:
            message += "; assumes the receiver is an `nn.Module`"
        self.fix(node, new, message, imports=backend_imports, **extra)

    def _optimize(self, node: cst.Call) -> None:
        arg = keyword(node, "backend")
        if arg is None and node.args and node.args[0].keyword is None and not node.args[0].star:
            arg = node.args[0]
        note = "`torch._dynamo.optimize` is deprecated: prefer `torch.compile(..., backend=\"neuron\")`"
        if _target.target(self.ctx) != _target.NEURON:
            self._optimize_portable(node, arg)
            return
        if arg is None:
            if double_star_arg(node) is not None:
                self.report(node, f"`torch._dynamo.optimize(...)`: make sure the backend is `\"neuron\"`; {note}")
                return
            self.fix(node, with_keyword(node, "backend", make_string("neuron")),
                     f'`torch._dynamo.optimize(...)`: `backend="neuron"` added (the default is Inductor); {note}')
            return
        value = string_value(arg.value)
        if value == "neuron":
            return
        if value in REPLACED_BACKENDS:
            self.fix(arg.value, make_string("neuron", arg.value).with_changes(
                lpar=getattr(arg.value, "lpar", ()), rpar=getattr(arg.value, "rpar", ())),
                f'`torch._dynamo.optimize("{value}")` -> `"neuron"`; {note}')
        else:
            self.report(arg.value, f"`torch._dynamo.optimize({short(arg.value, 50)})`: use the `\"neuron\"` "
                        f"backend on Trainium; {note}")

    def _optimize_portable(self, node: cst.Call, arg: cst.Arg | None) -> None:
        """``--target cpu``: Inductor is the CPU's backend (kept). ``accelerator``: the backend
        chosen from the detected device."""
        note = "`torch._dynamo.optimize` is deprecated: prefer `torch.compile`"
        value = string_value(arg.value) if arg is not None else None
        chosen = _target.compile_backend(self.ctx)
        if arg is not None and value is None and "current_accelerator" in self.ctx.module.code_for_node(arg.value):
            return
        if chosen is None or (arg is not None and value not in REPLACED_BACKENDS):
            if value == "cudagraphs" or (arg is not None and value is None):
                self.report(arg.value if arg is not None else node,
                            f"`torch._dynamo.optimize({short(arg.value, 50) if arg is not None else ''})`: make sure "
                            f"the backend compiles for the CPU (Inductor); {note}")
            return
        expr, imports = chosen
        if arg is None:
            if double_star_arg(node) is not None:
                return
            self.fix(node, with_keyword(node, "backend", expr),
                     _target.say(self.ctx, "`torch._dynamo.optimize(...)`: {compile_backend}; {note}", note=note),
                     imports=imports)
        else:
            self.fix(arg.value, expr.with_changes(lpar=getattr(arg.value, "lpar", ()),
                                                  rpar=getattr(arg.value, "rpar", ())),
                     _target.say(self.ctx, '`torch._dynamo.optimize("{value}")` -> {compile_backend}; {note}',
                                 value=value, note=note),
                     imports=imports)

    # -- bare decorator and references ------------------------------------------------------------
    def visit_Decorator(self, node: cst.Decorator) -> None:
        dec = node.decorator
        if not (isinstance(dec, (cst.Name, cst.Attribute)) and self.ctx.qualify(dec) == "torch.compile"):
            return
        chosen = _target.compile_backend(self.ctx)  # None: --target cpu keeps Inductor
        args = [] if chosen is None else [new_keyword("backend", chosen[0])]
        args.append(new_keyword("dynamic", cst.Name("False")))
        backend = _target.say(self.ctx, "{compile_backend}{why}", why=WHY_BACKEND[_target.target(self.ctx)]) \
            if chosen is not None else "no backend (Inductor, the default, compiles for the CPU)"
        self.fix(dec, cst.Call(func=dec, args=[*(a.with_changes(comma=cst.Comma(
                     whitespace_after=cst.SimpleWhitespace(" "))) for a in args[:-1]), args[-1]]),
                 f"`@torch.compile` -> `@torch.compile(...)`: {backend}; `dynamic=False` ({STATIC_REASON}); "
                 "consider `fullgraph=True` (recommended: graph breaks then raise)",
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
