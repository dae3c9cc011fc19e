"""NRN401: the NCCL process-group backend -> ``"neuron"``."""

from __future__ import annotations

import libcst as cst

from neuronize.analysis.context import FileContext
from neuronize.transform import Evidence, Example, Safety, Transform
from neuronize.transforms._helpers import per_target
from neuronize.transforms._helpers.calls import insert_after, keyword, without_args
from neuronize.transforms._helpers.device_choice import neuron_first
from neuronize.transforms._helpers.device_model import process_group_edits
from neuronize.transforms._helpers.distributed import (BackendUse, backend_argument, creates_process_group,
                                                dist_function, in_cuda_only_branch, nccl_backend, plan_backends,
                                                request_torch_neuronx, with_neuron_entry)
from neuronize.transforms._helpers.device_model import cuda_keeping, in_value_arm
from neuronize.transforms._helpers.nodes import parenthesized
from neuronize.transforms._helpers.value_flow import Assignments, enclosing_scope
from neuronize.transforms._helpers.literals import make_string, string_value

DEVICE_BACKEND = "torch.distributed.get_default_backend_for_device"
#: where a backend literal stands alone, so that a host-aware one needs no parentheses
BARE = (cst.Arg, cst.Assign, cst.AnnAssign, cst.Param, cst.Element, cst.DictElement, cst.Return)


class NcclBackend(Transform):
    """Finds process groups created with the NCCL backend, which does not exist on Trainium.

    What it does:
        Rewrites the backend of `dist.init_process_group(...)` and `dist.new_group(...)` from
        `"nccl"` / `"cuda:nccl"` / `dist.Backend.NCCL` to the target's (on the `neuron` target
        host-aware, see below), under any import spelling.
        When the backend is a variable it follows it within the file: an assignment of a literal
        in the same function or at module level, a parameter default, an `os.environ.get(..., "nccl")`
        default, an argparse `default="nccl"` (and adds `"neuron"` to that option's `choices`), an
        attribute set in the file (`args.backend = "nccl"`) or a class-level default
        (`distributed_backend: str = "nccl"` in a dataclass or config class, read as
        `cfg.distributed_backend`). DeepSpeed's `deepspeed.init_distributed(dist_backend="nccl")`
        is followed the same way and reported: DeepSpeed has no Neuron accelerator.
        Adds `"neuron": "neuron"` next to `"cuda": "nccl"` in device-to-backend tables. Drops a
        `device_id=` from an `init_process_group` whose backend it migrates. In a script (a file
        with `if __name__ == "__main__":`) it adds a guarded `import torch_neuronx` (`try: ...
        except ImportError: pass`); a module that other code imports gets none (the device
        autoloads). A backend that only runs on CUDA stays NCCL and is reported: in the branch of
        `if device.type == "cuda":`, of `"nccl" if dist.is_nccl_available() else "gloo"` (false on
        Trainium, so the gloo side runs there), of an `if torch.cuda.is_available():` kept for
        CUDA (it calls CUDA-only APIs: the file's other process-group edits then wait for it, as
        Trainium's process group is the other branch's), or passed with `pg_options=` (options
        such as `ProcessGroupNCCL.Options` belong to NCCL), and so does a value whose name or attribute is
        also passed to a CUDA-only function (`torch.cuda.*`). Reports comparisons with `"nccl"`,
        `dist.is_nccl_available()`, backends it cannot follow, and transformers'
        `ddp_backend="nccl"`. Strings in messages and logs are left alone. On the `neuron` target
        the backend is host-aware, `"neuron" if <the accelerator is Neuron> else "nccl"`, and
        joins the device's edit group: the GPU box keeps NCCL with its CUDA device.
        The backend, the
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
        dist.init_process_group(backend="neuron" if on_neuron() else "nccl")

    Fix safety:
        Safe for `"nccl"`, `"cuda:nccl"` and a backend followed to its literal. Unsafe for a mixed
        `"cpu:gloo,cuda:nccl"` (collectives on CPU tensors lose gloo), for a backend reached only
        through an attribute or a class default (other code may set or read it), for the added table entry
        (the table's other uses are unknown), for the `device_id` drop (the group then binds its
        device lazily). In a file where the group holds an unsafe edit, the backend is unsafe too;
        where a member cannot be fixed (a `set_device` whose value is used), none is applied.

    Evidence:
        DOC: the distributed guide (the `"neuron"` backend; `import torch_neuronx`), the device
        autoload (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/index.html). SRC for
        one device per process. INF for the table entry and the reports on comparisons and
        `is_nccl_available()`, and for DeepSpeed's use of an existing process group.
    """

    id = "NRN401"
    targets = per_target.ALL
    name = "nccl-backend"
    safety = Safety.SAFE
    evidence = Evidence.DOC
    section = "distributed"
    references = ("https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/guides/torch-distributed.html",)
    tokens = (b"nccl", b"NCCL", b"init_process_group", b"init_distributed")
    examples = (
        Example(
            'import torch.distributed as dist\ndist.init_process_group(backend="nccl")\n',
            ('import torch.distributed as dist\n'
                'import torch\n'
                '\n'
                'dist.init_process_group(backend="neuron" if hasattr(torch, "accelerator") and torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "neuron" else "nccl")\n'),
        ),
        Example(
            "from torch.distributed import init_process_group\nBACKEND = 'nccl'\n\n\n"
            "def setup():\n    init_process_group(BACKEND)\n",
            ('from torch.distributed import init_process_group\n'
                'import torch\n'
                '\n'
                "BACKEND = 'neuron' if hasattr(torch, 'accelerator') and torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == 'neuron' else 'nccl'\n"
                '\n'
                '\n'
                'def setup():\n'
                '    init_process_group(BACKEND)\n'),
        ),
        Example('import logging\nlogging.info("using nccl for collectives")\n'
                'import torch.distributed as dist\nif dist.get_backend() == "nccl":\n    pass\n'),
    )

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._seen = Assignments()
        self._uses: list[BackendUse] = []
        self._tables: list[tuple[cst.Dict, cst.Dict]] = []
        #: ids of NCCL literals in a branch that only runs on CUDA -> whether they hold back the
        #: file's process-group edits (a guard kept for CUDA: Trainium's path has no NCCL group to move)
        self._branch_kept: dict[int, bool] = {}
        #: names assigned `dist.get_default_backend_for_device(...)`
        self._neutral: set[str] = set()
        #: ids of NCCL literals that already serve CUDA hosts beside a Neuron branch or arm of
        #: their own (NRN107 / NRN110 write it; a first run wrote a host-aware backend): they
        #: stay; and of those standing alone (not an operand)
        self._served: set[int] = set()
        self._bare: set[int] = set()

    # -- the walk ----------------------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        self._seen.call(node, self.ctx.qualify)
        arg = keyword(node, "ddp_backend")
        if arg is not None:
            value = string_value(arg.value)
            if value is not None and nccl_backend(value):
                self.report(arg, 'transformers\' `ddp_backend="nccl"`: remove it on Trainium and let the '
                            "Trainer pick the backend (its Neuron device branch)", evidence=Evidence.THIRD_PARTY)
            return
        qualified = self.ctx.qualify(node.func)
        if dist_function(qualified) == "is_nccl_available":
            self.report(node, "`is_nccl_available()` is always false on Trainium: test "
                        '`torch.distributed.is_backend_available("neuron")` where the guarded code picks '
                        "the backend", evidence=Evidence.INF)
            return
        kind = creates_process_group(qualified)
        arg = backend_argument(node, kind) if kind is not None else None
        if kind is None or arg is None:
            return
        options = keyword(node, "pg_options")
        device_id = keyword(node, "device_id") if kind == "init_process_group" else None
        self._uses.append(BackendUse(
            node, kind, arg.value, enclosing_scope(self.ctx), device_id=device_id,
            options=options is not None and not (isinstance(options.value, cst.Name) and options.value.value == "None")))

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        value = string_value(node)
        if value is None or not nccl_backend(value):
            return
        keeping = cuda_keeping(self.ctx)
        if keeping == "" or per_target.target(self.ctx) == per_target.NEURON and in_value_arm(self.ctx):
            self._served.add(id(node))  # NRN107 / NRN110 give Neuron its own branch or arm
        elif keeping or in_cuda_only_branch(self.ctx):
            self._branch_kept[id(node)] = not in_cuda_only_branch(self.ctx)
        if isinstance(self.ctx.parent, BARE):
            self._bare.add(id(node))

    def visit_IfExp(self, node: cst.IfExp) -> None:
        if neuron_first(node):
            self._served.add(id(node.orelse))  # a host-aware backend (a first run wrote it)

    def visit_Assign(self, node: cst.Assign) -> None:
        self._seen.statement(enclosing_scope(self.ctx), node)
        if _any_device(self.ctx, self._neutral, node.value):
            self._neutral.update(t.target.value for t in node.targets if isinstance(t.target, cst.Name))

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._seen.statement(enclosing_scope(self.ctx), node)

    def visit_Dict(self, node: cst.Dict) -> None:
        replacement = with_neuron_entry(node)
        if replacement is not None:
            self._tables.append((node, replacement))

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
        plan = plan_backends(self.ctx, self._uses, self._seen, self._branch_kept)
        plan.edits = [e for e in plan.edits if id(e.node) not in self._served]
        neuron = per_target.target(self.ctx) == per_target.NEURON
        for expr in plan.unresolved:
            if _any_device(self.ctx, self._neutral, expr):
                continue
            self.report(expr, f"the backend comes from `{cst.Module([]).code_for_node(expr)}`, which neuronize "
                        'cannot follow: make it `"neuron"` on Trainium')
        group = process_group_edits(self.ctx)
        for literal, why in plan.kept:
            self.report(literal, f"NCCL backend left as it is: {why}", evidence=Evidence.INF,
                        group=group if self._branch_kept.get(id(literal)) else None)
        for call, device_id in plan.device_ids:
            self._drop_device_id(call, device_id)
        if plan.edits:
            safest = min((e.safety for e in plan.edits), key=[Safety.SAFE, Safety.UNSAFE].index)
            request_torch_neuronx(self, safest, group=group)
        for e in plan.edits:
            value = e.replacement if id(e.node) in self._bare else parenthesized(e.replacement)
            self.fix(e.node, value, e.message, safety=e.safety, imports=e.imports, group=group)
        seen_choices: set[int] = set()
        for seq, index in plan.choices if neuron else ():
            if id(seq) in seen_choices:
                continue
            seen_choices.add(id(seq))
            anchor = seq.elements[index]  # type: ignore[attr-defined]
            new = cst.Element(make_string("neuron", anchor.value))
            replacement = seq.with_changes(elements=insert_after(seq.elements, index, new))  # type: ignore[attr-defined]
            self.fix(seq, replacement, 'adds `"neuron"` to the backend option\'s `choices`')
        for table, replacement in self._tables:
            if not neuron:
                self.report(table, "device-to-backend table: the `\"cuda\"` entry stays for GPU runs; "
                            "`dist.get_default_backend_for_device(device)` gives the backend of any device",
                            evidence=Evidence.INF)
                continue
            self.fix(table, replacement, 'adds `"neuron": "neuron"` to this device-to-backend table (the `"cuda"` '
                     "entry stays for GPU runs)", safety=Safety.UNSAFE, evidence=Evidence.INF)

    def _drop_device_id(self, call: cst.Call, device_id: cst.Arg) -> None:
        if per_target.target(self.ctx) != per_target.NEURON:
            self.report(device_id, "`device_id=` names a CUDA device: give the device of the new backend, "
                        "with an index, or drop it")
            return
        self.fix(call, without_args(call, device_id),
                 "drops `device_id=` from `init_process_group`: PyTorch rejects a device without an index, and "
                 "under the `neuron` process group each process sees one NeuronCore; the group then binds "
                 "its device on first use", safety=Safety.UNSAFE, evidence=Evidence.SRC,
                 group=process_group_edits(self.ctx))


def _any_device(ctx: FileContext, neutral: set[str], expr: cst.BaseExpression) -> bool:
    """``dist.get_default_backend_for_device(...)`` (or a name in ``neutral``, assigned one): the
    backend of whatever device the program runs on, `"neuron"` included: nothing to migrate."""
    if isinstance(expr, cst.Name):
        return expr.value in neutral
    return isinstance(expr, cst.Call) and ctx.qualify(expr.func) == DEVICE_BACKEND
