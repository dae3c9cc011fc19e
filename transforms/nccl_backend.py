"""NRN401: the NCCL process-group backend -> ``"neuron"``."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from neuronize.transform import Evidence, Example, Safety, Transform
from neuronize.transforms import _target
from neuronize.transforms._calls import argument, insert_after, keyword, without_args
from neuronize.transforms._distributed import (PROCESS_GROUP, backend_edit, dist_function, names_nccl, nccl_backend,
                                                in_cuda_only_branch, nccl_choice, request_torch_neuronx,
                                                with_neuron_entry)
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
        Adds `"neuron": "neuron"` next to `"cuda": "nccl"` in device-to-backend tables. Drops a
        `device_id=` from an `init_process_group` whose backend it migrates. In a script (a file
        with `if __name__ == "__main__":`) it adds a guarded `import torch_neuronx` (`try: ...
        except ImportError: pass`); a module that other code imports gets none (the device
        autoloads). A backend that only runs on CUDA stays NCCL and is reported: in the branch of
        `if device.type == "cuda":`, of `"nccl" if dist.is_nccl_available() else "gloo"` (false on
        Trainium, so the gloo side runs there), or passed with `pg_options=` (options such as
        `ProcessGroupNCCL.Options` belong to NCCL). Reports comparisons with `"nccl"`,
        `dist.is_nccl_available()`, backends it cannot follow, and transformers'
        `ddp_backend="nccl"`. Strings in messages and logs are left alone. The backend, the
        `device_id` drop, NRN116's `set_device` deletion and NRN403's device ids form one edit
        group (`process-group`): applied together or not at all, at the weakest safety among them.

    Why on TorchNeuron:
        TorchNeuron registers its own process-group backend, `"neuron"`; NCCL is NVIDIA's
        library. The official distributed guide also imports `torch_neuronx` where the process
        group is created; elsewhere the device autoloads, and an unconditional import would break
        every host without Neuron. PyTorch rejects a `device_id` without an index, and under the
        `neuron` process group each process sees one NeuronCore, so the argument is dropped.

    Example:
        import torch.distributed as dist
        dist.init_process_group(backend="nccl")

    Use instead:
        import torch.distributed as dist
        dist.init_process_group(backend="neuron")

    Fix safety:
        Safe for `"nccl"`, `"cuda:nccl"` and a backend followed to its literal. Unsafe for a mixed
        `"cpu:gloo,cuda:nccl"` (collectives on CPU tensors lose gloo), for the added table entry
        (the table's other uses are unknown), for the `device_id` drop (the group then binds its
        device lazily). In a file where the group holds an unsafe edit, the backend is unsafe too;
        where a member cannot be fixed (a `set_device` whose value is used), none is applied.

    Evidence:
        DOC: the distributed guide (the `"neuron"` backend; `import torch_neuronx`), the device
        autoload (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/index.html). SRC for
        one device per process. INF for the table entry and the reports on comparisons and
        `is_nccl_available()`.
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
            'import torch.distributed as dist\ndist.init_process_group(backend="neuron")\n',
        ),
        Example(
            "from torch.distributed import init_process_group\nBACKEND = 'nccl'\n\n\n"
            "def setup():\n    init_process_group(BACKEND)\n",
            "from torch.distributed import init_process_group\n"
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
        #: id(literal) -> why it stays NCCL (a CUDA-only branch, NCCL options travelling with it)
        self._kept: dict[int, str] = {}
        #: `init_process_group` calls with a `device_id=`, and the backend literals they were given
        self._device_ids: list[tuple[cst.Call, cst.Arg, list[cst.BaseExpression]]] = []

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
        options = keyword(node, "pg_options")
        if options is not None and not (isinstance(options.value, cst.Name) and options.value.value == "None"):
            for literal in found.literals:
                self._kept[id(literal)] = ("`pg_options` travel with this backend (options such as "
                                           "`ProcessGroupNCCL.Options` belong to NCCL)")
        device_id = keyword(node, "device_id")
        if name == "init_process_group" and device_id is not None:
            self._device_ids.append((node, device_id, found.literals))
        if found.literals:
            return
        if isinstance(arg.value, (cst.Name, cst.Attribute)) and self.ctx.qualify(arg.value) is None:
            self._pending.append(_Pending(arg.value, enclosing_scope(self.ctx)))
        elif found.opaque:
            self._report_unresolved(arg.value)

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        value = string_value(node)
        if value is not None and nccl_backend(value) and in_cuda_only_branch(self.ctx):
            self._kept[id(node)] = "it is in a branch that only runs on CUDA (on Trainium the other branch runs)"

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
        for literal in literals:
            if id(literal) in self._kept:
                self.report(literal, f"NCCL backend left as it is: {self._kept[id(literal)]}",
                            evidence=Evidence.INF)
        edits = [backend_edit(self.ctx, lit) for lit in literals if id(lit) not in self._kept]
        edited = {id(e.node) for e in edits}
        for call, device_id, given in self._device_ids:
            if any(id(lit) in edited for lit in given):
                self._drop_device_id(call, device_id)
        if edits:
            safest = min((e.safety for e in edits), key=[Safety.SAFE, Safety.UNSAFE].index)
            request_torch_neuronx(self, safest, group=PROCESS_GROUP)
        for e in edits:
            self.fix(e.node, e.replacement, e.message, safety=e.safety, imports=e.imports, group=PROCESS_GROUP)
        seen_choices: set[int] = set()
        for seq, index in self._choices if _target.target(self.ctx) == _target.NEURON else ():
            if id(seq) in seen_choices:
                continue
            seen_choices.add(id(seq))
            anchor = seq.elements[index]  # type: ignore[attr-defined]
            new = cst.Element(make_string("neuron", anchor.value))
            replacement = seq.with_changes(elements=insert_after(seq.elements, index, new))  # type: ignore[attr-defined]
            self.fix(seq, replacement, 'adds `"neuron"` to the backend option\'s `choices`')
        for node, replacement, msg, safety, evidence in self._others:  # type: ignore[assignment]
            if _target.target(self.ctx) != _target.NEURON:
                self.report(node, "device-to-backend table: the `\"cuda\"` entry stays for GPU runs; "
                            "`dist.get_default_backend_for_device(device)` gives the backend of any device",
                            evidence=evidence)
                continue
            self.fix(node, replacement, msg, safety=safety, evidence=evidence)

    def _drop_device_id(self, call: cst.Call, device_id: cst.Arg) -> None:
        if _target.target(self.ctx) != _target.NEURON:
            self.report(device_id, "`device_id=` names a CUDA device: give the device of the new backend, "
                        "with an index, or drop it")
            return
        self.fix(call, without_args(call, device_id),
                 "drops `device_id=` from `init_process_group`: PyTorch rejects a device without an index, and "
                 "under the `neuron` process group each process sees one NeuronCore; the group then binds "
                 "its device on first use", safety=Safety.UNSAFE, evidence=Evidence.SRC, group=PROCESS_GROUP)

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
