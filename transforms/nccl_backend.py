"""NRN401: the NCCL process-group backend -> ``"neuron"``."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from neuronize.transform import Evidence, Example, ImportRequest, Safety, Transform
from neuronize.transforms import _target
from neuronize.transforms._calls import argument, insert_after, keyword
from neuronize.transforms._distributed import names_nccl, nccl_choice, with_neuron_entry, backend_edit, dist_function, nccl_backend, request_torch_neuronx
from neuronize.transforms._value_flow import Assignments, Found, Scope, carried, enclosing_scope, resolve
from neuronize.transforms._literals import make_string, string_value

@dataclass
class _Pending:
    """A backend argument that is a name or an attribute, resolved at the end of the file."""

    expr: cst.BaseExpression
    scope: Scope


class NcclBackend(Transform):
    """Finds process groups created with the NCCL backend, which does not exist on Trainium.

    What it does:
        Rewrites the backend of `dist.init_process_group(...)` and `dist.new_group(...)` from
        `"nccl"` / `"cuda:nccl"` / `dist.Backend.NCCL` to `"neuron"`, under any import spelling.
        When the backend is a variable it follows it within the file: an assignment of a literal
        in the same function or at module level, a parameter default, an `os.environ.get(..., "nccl")`
        default, or an argparse `default="nccl"` (and adds `"neuron"` to that option's `choices`).
        Adds `"neuron": "neuron"` next to `"cuda": "nccl"` in device-to-backend tables and inserts
        `import torch_neuronx  # noqa: F401`. Reports comparisons with `"nccl"`,
        `dist.is_nccl_available()` (always false on Trainium), backends it cannot follow, and
        transformers' `ddp_backend="nccl"`. Strings in messages and logs are
        left alone.

    Why on TorchNeuron:
        TorchNeuron registers its own process-group backend, `"neuron"`; NCCL is NVIDIA's
        library. The official distributed guide also imports `torch_neuronx` explicitly, to
        register the device and the backend.

    Example:
        import torch.distributed as dist
        dist.init_process_group(backend="nccl")

    Use instead:
        import torch.distributed as dist
        import torch_neuronx  # noqa: F401
        dist.init_process_group(backend="neuron")

    Fix safety:
        Safe for `"nccl"`, `"cuda:nccl"` and a backend followed to its literal. Unsafe for a mixed
        `"cpu:gloo,cuda:nccl"` (collectives on CPU tensors lose gloo), for the added table entry
        (the table's other uses are unknown).

    Evidence:
        DOC: the distributed guide (the `"neuron"` backend; `import torch_neuronx`). INF for the
        table entry and the reports on comparisons and `is_nccl_available()`.
    """

    id = "NRN401"
    targets = _target.ALL
    name = "nccl-backend"
    safety = Safety.SAFE
    evidence = Evidence.DOC
    section = "distributed"
    references = ("https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/guides/torch-distributed.html",)
    tokens = (b"nccl", b"NCCL", b"init_process_group")
    examples = (
        Example(
            'import torch.distributed as dist\ndist.init_process_group(backend="nccl")\n',
            'import torch.distributed as dist\nimport torch_neuronx  # noqa: F401\n'
            'dist.init_process_group(backend="neuron")\n',
        ),
        Example(
            "from torch.distributed import init_process_group\nBACKEND = 'nccl'\n\n\n"
            "def setup():\n    init_process_group(BACKEND)\n",
            "from torch.distributed import init_process_group\nimport torch_neuronx  # noqa: F401\n"
            "BACKEND = 'neuron'\n\n\ndef setup():\n    init_process_group(BACKEND)\n",
        ),
        Example('import logging\nlogging.info("using nccl for collectives")\n'
                'import torch.distributed as dist\nif dist.get_backend() == "nccl":\n    pass\n'),
    )

    def __init__(self, ctx) -> None:  # type: ignore[no-untyped-def]
        super().__init__(ctx)
        self._seen = Assignments()
        self._pending: list[_Pending] = []
        self._backend_literals: list[cst.BaseExpression] = []
        self._choices: list[tuple[cst.BaseExpression, int]] = []
        self._others: list[tuple[cst.CSTNode, cst.CSTNode, str, Safety, Evidence]] = []

    def _carried(self, expr: cst.BaseExpression) -> Found:
        return carried(expr, lambda e: names_nccl(self.ctx, e), self.ctx.qualify)

    # -- the walk ----------------------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "add_argument":
            self._seen.option(node)
            return
        if keyword(node, "ddp_backend") is not None:
            arg = keyword(node, "ddp_backend")
            value = string_value(arg.value) if arg is not None else None
            if arg is not None and value is not None and nccl_backend(value):
                self.report(arg, 'transformers\' `ddp_backend="nccl"`: remove it on Trainium and let the '
                            "Trainer pick the backend (its Neuron device branch)", evidence=Evidence.THIRD_PARTY)
            return
        name = dist_function(self.ctx.qualify(func))
        if name == "is_nccl_available":
            self.report(node, "`is_nccl_available()` is always false on Trainium: test "
                        '`torch.distributed.is_backend_available("neuron")` where the guarded code picks '
                        "the backend", evidence=Evidence.INF)
            return
        if name not in ("init_process_group", "new_group"):
            return
        arg = argument(node, "backend", 0 if name == "init_process_group" else 2)
        if arg is None:
            return
        found = self._carried(arg.value)
        self._backend_literals += found.literals
        if found.literals:
            return
        if isinstance(arg.value, (cst.Name, cst.Attribute)) and self.ctx.qualify(arg.value) is None:
            self._pending.append(_Pending(arg.value, enclosing_scope(self.ctx)))
        elif found.opaque:
            self._report_unresolved(arg.value)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._seen.assign(enclosing_scope(self.ctx), target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._seen.assign(enclosing_scope(self.ctx), node.target, node.value)

    def visit_Dict(self, node: cst.Dict) -> None:
        replacement = with_neuron_entry(node)
        if replacement is None:
            return
        self._others.append((node, replacement,
                             'adds `"neuron": "neuron"` to this device-to-backend table (the `"cuda"` '
                             "entry stays for GPU runs)", Safety.UNSAFE, Evidence.INF))

    def visit_Comparison(self, node: cst.Comparison) -> None:
        parts = [node.left, *(t.comparator for t in node.comparisons)]
        for part in parts:
            candidates = [part]
            if isinstance(part, (cst.Tuple, cst.List, cst.Set)):
                candidates = [e.value for e in part.elements]
            for cand in candidates:
                value = string_value(cand)
                if value is not None and nccl_backend(value):
                    self.report(node, 'compares a backend with `"nccl"`: false under the `"neuron"` backend; '
                                "check what the guarded code does on Trainium", evidence=Evidence.INF)
                    return

    # -- the end of the file -----------------------------------------------------------------
    def leave_Module(self, original_node: cst.Module) -> None:
        for pending in self._pending:
            self._resolve(pending)
        literals = {id(n): n for n in self._backend_literals}.values()
        edits = [backend_edit(self.ctx, lit) for lit in literals]
        imports: tuple[ImportRequest, ...] = ()
        if edits:
            safest = min((e.safety for e in edits), key=[Safety.SAFE, Safety.UNSAFE].index)
            imports = request_torch_neuronx(self, safest)
        for e in edits:
            self.fix(e.node, e.replacement, e.message, safety=e.safety, imports=(*imports, *e.imports))
        seen_choices: set[int] = set()
        for seq, index in self._choices if _target.target(self.ctx) == _target.NEURON else ():
            if id(seq) in seen_choices:
                continue
            seen_choices.add(id(seq))
            anchor = seq.elements[index]  # type: ignore[attr-defined]
            new = cst.Element(make_string("neuron", anchor.value))
            replacement = seq.with_changes(elements=insert_after(seq.elements, index, new))  # type: ignore[attr-defined]
            self.fix(seq, replacement, 'adds `"neuron"` to the backend option\'s `choices`')
        for node, replacement, msg, safety, evidence in self._others:
            if _target.target(self.ctx) != _target.NEURON:
                self.report(node, "device-to-backend table: the `\"cuda\"` entry stays for GPU runs; "
                            "`dist.get_default_backend_for_device(device)` gives the backend of any device",
                            evidence=evidence)
                continue
            self.fix(node, replacement, msg, safety=safety, evidence=evidence)

    def _report_unresolved(self, expr: cst.BaseExpression) -> None:
        code = cst.Module([]).code_for_node(expr)
        self.report(expr, f'the backend comes from `{code}`, which neuronize cannot follow: make it '
                    '`"neuron"` on Trainium')

    def _resolve(self, pending: _Pending) -> None:
        found = resolve(pending.expr, pending.scope, self.ctx.module, self._seen)
        if found.unresolved:
            self._report_unresolved(pending.expr)
        for call in found.options:
            default = keyword(call, "default")
            if default is not None:
                self._backend_literals += self._carried(default.value).literals
            choices = keyword(call, "choices")
            at = nccl_choice(choices.value) if choices is not None else None
            if choices is not None and at is not None:
                self._choices.append((choices.value, at))
        literals: list[cst.BaseExpression] = []
        opaque = False
        for value in found.values:
            sub = self._carried(value)
            literals += sub.literals
            opaque |= sub.opaque
        self._backend_literals += literals
        if found.values and not literals and opaque:
            self._report_unresolved(pending.expr)
