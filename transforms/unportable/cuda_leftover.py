"""NRN999: the catch-all: CUDA device strings, NCCL names and GPU indexes no other rule claims."""

from __future__ import annotations

import libcst as cst

from neuronize.analysis.backend_keys import names_backends
from neuronize.analysis.context import FileContext
from neuronize.transform import Evidence, Example, Safety, Transform
from neuronize.transforms._helpers import per_target
from neuronize.transforms._helpers.device_model import cuda_keeping, in_detection, in_dispatch_test, in_fallback_test
from neuronize.transforms._helpers.calls import is_cuda_available_call, partial_function
from neuronize.transforms._helpers.distributed import cuda_only_test
from neuronize.transforms._helpers.leftovers import (
    BACKEND, FSDP, SELECTORS, branches, cuda_value, gpu_index, in_message, is_neuron_check, required, gpu_indexed_device, index_message, leftover_message, list_message, listed, site,
    PG_DEVICE_ID, compared_device, labels, pg_device_id, test_message, validates,
)
from neuronize.analysis.roles import TEST
from neuronize.transforms._helpers.literals import string_value
from neuronize.transforms._helpers.messages import short
from neuronize.transforms._helpers.names import last_name
from neuronize.transforms._helpers.value_flow import enclosing_scope

#: literal collections whose strings are entries of a list, not values used by the code
_COLLECTIONS = (cst.List, cst.Tuple, cst.Set)


class CudaLeftover(Transform):
    """Finds CUDA-specific values that no other rule fixes or reports: what a migration leaves behind.

    What it does:
        Reports, wherever they are in code, CUDA device strings (`"cuda:0"`, `f"cuda:{rank}"`,
        `"cuda:{}".format(i)`) and NCCL backend names (`"nccl"`, `dist.Backend.NCCL`) that no
        other rule claims: a device string assigned to a variable later given to
        `torch.load(map_location=...)`, `"cuda:0"` inside an RPC argument tuple, a backend name in
        an attribute, a config field or a default, a `{"cuda:0": "cuda:1"}` remap. Reports GPU
        indexes used as devices: `.to(local_rank)`, `.to(self.gpu_id)`, `device=args.gpu`,
        `.cuda(i)`, `torch.device(rank)`, `torch.device(device_type, local_rank)`, `f"{device.type}:{args.gpu}"`, FSDP's
        `device_id=local_rank` (also through `partial(FSDP, ...)`), and selected with
        `torch.accelerator.set_device_index(rank)`, also through a name assigned one earlier in
        the function or class (`idx = int(os.environ["LOCAL_RANK"])`; `0` is no GPU index: it
        names the one device a Neuron process has). A literal list of devices or backends (`choices=["cpu", "cuda"]`,
        `x in ("cuda", "xpu")`, `Literal[...]`, `SUPPORTED_DEVICES = (...)`, a table keyed by
        device) is device-agnostic: it gets one finding, asking for `"neuron"`, when it validates
        what a program accepts and lacks it.
        Reports RWKV-style placement strategies (`strategy="cuda fp16"`). Not values: `"cuda"` as
        a member of an enumeration (`class Timer(Enum): CUDA = "cuda"`) or given to a keyword,
        parameter, variable or call named as a label (`timer_type="cuda"`,
        `metrics.labels(backend="cuda")`). In test code each finding says why tests are left as
        they are, in the words the other rules use, so the text output tells it once per reason.
        Never looked at: comments, docstrings, messages (`print`, logging, `warn`), dict keys
        (they name what an entry is for: a remap's source device, a table's), and code that runs
        only on CUDA: under `if device.type == "cuda":` or `x.is_cuda` (whose own finding says what
        to do), under `if torch.cuda.is_available():` where that check stays (another target, a
        dispatch over devices; on the neuron target NRN110 turns it into the Neuron check, so
        its block is scanned), past the Neuron check a migration writes (host-aware fallbacks).
        This rule's findings give way to every other rule's: a value inside, around or at code
        another rule reported in the same run (up to its statement; a reported `if` does not
        claim its body) is theirs, so `check` lists each site once. Selecting this rule alone, or
        ignoring another, hands the other rule's sites to it.

    Why on TorchNeuron:
        A migration is done when no CUDA-specific value is left: after `neuronize fix
        --unsafe-fixes`, a `check` that exits 0 must mean that. An integer device is an index on
        the current accelerator; under torchrun the `"neuron"` process group gives each process
        one device, index 0, so a GPU index that worked next to `torch.cuda.set_device` fails on
        every rank but the first once the selection is migrated.

    Example:
        loc = f"cuda:{self.gpu_id}"
        snapshot = torch.load(path, map_location=loc)
        self.model = model.to(self.gpu_id)

    Use instead:
        snapshot = torch.load(path, map_location="cpu")
        self.model = model.to(device)  # device = "neuron"

    Fix safety:
        Report only: where a value goes (a path, a process group, a checkpoint) is not known
        where it is written, and the index policy depends on how the program is launched.

    Evidence:
        DOC: the `"neuron"` device and process group (TorchNeuron documentation); an integer
        device is an index on the current accelerator (PyTorch `torch.device` documentation).
        SRC: the `"neuron"` process group pins each process to one NeuronCore (torch-neuronx
        source). INF: whether a list validates what a program accepts.
    """

    id = "NRN999"
    name = "cuda-leftover"
    safety = Safety.REPORT_ONLY
    evidence = Evidence.DOC
    section = "device"
    effort = "low"
    catch_all = True
    references = (
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/index.html",
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/guides/torch-distributed.html",
        "https://docs.pytorch.org/docs/stable/tensor_attributes.html#torch-device",
    )
    tokens = (b"cuda", b"nccl", b"NCCL", b"rank", b"RANK", b"gpu")
    examples = (
        Example('loc = f"cuda:{rank}"\nstate = torch.load(path, map_location=loc)\n'),
        Example("model = model.to(local_rank)\n"),
        Example('rpc.rpc_async("worker1", run, args=("cuda:0", x))\n'),
        Example('config.backend = "nccl"\n'),
        Example('parser.add_argument("--backend", choices=["nccl", "gloo"])\n'),
    )

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._lists: dict[int, bool] = {}  # id of a collection -> it is a device list (decided once)
        #: names assigned a GPU index so far (`idx = int(os.environ["LOCAL_RANK"])`), by scope
        self._indexes: set[tuple[int, str]] = set()

    # -- strings -------------------------------------------------------------------------------
    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        text = node.value.lower()
        if "cuda" in text or "nccl" in text:
            self._value(node)

    def visit_FormattedString(self, node: cst.FormattedString) -> None:
        index = gpu_indexed_device(node)
        if index is not None:
            self._index(f"device `{short(node, 60)}`", index, node)
        elif cuda_value(node):
            self._value(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value == "NCCL" and self.ctx.qualify(node) == "torch.distributed.Backend.NCCL":
            self._value(node, BACKEND)

    def _value(self, node: cst.CSTNode, kind: str | None = None) -> None:
        stack = self._up_to(self._expression(node))
        value = stack[-1]
        kind = kind or cuda_value(value)
        holder = stack[-2]
        if kind is None or isinstance(holder, (cst.Expr, cst.ConcatenatedString)) or in_message(stack) \
                or self._cuda_only() or labels(stack) or compared_device(stack):
            return  # not CUDA; a docstring, a piece of a longer text, a message; dead code on Trainium; a label;
            # a device compared with
        if isinstance(holder, cst.DictElement):
            if self._listing(stack[-3], stack[:-2]) or value is holder.key:
                return  # a key names what its entry is for (a remap's source device, a table's)
        else:
            at = self._container(stack)
            if at is not None and self._listing(stack[at], stack[: at + 1]):
                return
        message = leftover_message(kind, value, *site(stack))
        role = self.ctx.role()
        if role is not None:
            message = test_message(value, role.reason) if role.kind == TEST else \
                f"{message}; CUDA may be the point here ({role.where}: {role.reason})"
        self.report(value, message)

    def _up_to(self, node: cst.CSTNode) -> list[cst.CSTNode]:
        """The walk's stack down to ``node`` (the node being visited or one of its ancestors)."""
        stack = self.ctx.stack
        while stack[-1] is not node:
            stack = stack[:-1]
        return stack

    def _expression(self, node: cst.CSTNode) -> cst.CSTNode:
        """The device expression a string starts: ``"cuda:{}".format(i)``, ``"cuda:%d" % i``."""
        stack, parent = self.ctx.stack, self.ctx.parent
        if isinstance(parent, cst.BinaryOperation) and parent.left is node and cuda_value(parent):
            return parent
        if isinstance(parent, cst.Attribute) and len(stack) > 2 and cuda_value(stack[-3]):
            return stack[-3]
        return node

    @staticmethod
    def _container(stack: list[cst.CSTNode]) -> int | None:
        """Where in ``stack`` the literal list (or ``Literal[...]`` type) is whose entry the value is."""
        if len(stack) > 2 and isinstance(stack[-2], cst.Element) and isinstance(stack[-3], _COLLECTIONS):
            return len(stack) - 3
        if len(stack) > 3 and isinstance(stack[-2], cst.Index) and isinstance(stack[-4], cst.Subscript) \
                and last_name(stack[-4].value) == "Literal":
            return len(stack) - 4
        return None

    def _listing(self, container: cst.CSTNode, stack: list[cst.CSTNode]) -> bool:
        """Whether ``container`` lists devices or backends (its strings are entries, not values);
        the first time, report it if it validates what a program accepts and lacks Neuron."""
        if id(container) not in self._lists:
            values = [string_value(v) for v in _entries(container)]
            kind = listed(values)
            # the project's own backends beside CUDA are entries too, and no device list to extend
            self._lists[id(container)] = kind is not None or names_backends(values)
            if kind is not None and "neuron" not in values and validates(container, stack):
                self.report(container, list_message(kind, container), evidence=Evidence.INF)
        return self._lists[id(container)]

    # -- integer devices -----------------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        name = last_name(node.func)
        first = node.args[0] if node.args and node.args[0].keyword is None and not node.args[0].star else None
        if first is not None:
            if (isinstance(node.func, cst.Attribute) and name in ("to", "cuda")) or (
                    name == "device" and self.ctx.qualify(node.func) == "torch.device"):
                # `torch.device(device_type, local_rank)`: the index is the second argument
                index = node.args[1] if name == "device" and len(node.args) > 1 else first
                self._index(PG_DEVICE_ID if pg_device_id(self.ctx.stack) else f"`{name}()`", index.value)
            elif name in ("set_device_index", "device_index") and self.ctx.qualify(node.func) in SELECTORS:
                self._index(f"`{name}()`", first.value, selects=True)
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value == "device":
                self._index("`device=`", arg.value)
            elif arg.keyword is not None and arg.keyword.value == "device_id" and self._builds_fsdp(node):
                self._index("FSDP's `device_id=`", arg.value)

    def _builds_fsdp(self, call: cst.Call) -> bool:
        """``FSDP(..., device_id=...)`` or ``partial(FSDP, device_id=...)``."""
        return self.ctx.qualify(partial_function(self.ctx, call) or call.func) in FSDP

    def _index(self, call: str, expr: cst.BaseExpression, node: cst.CSTNode | None = None,
               selects: bool = False) -> None:
        if (node is not None or gpu_index(expr) or self._holds_index(expr)) and not self._cuda_only():
            role = self.ctx.role()
            test = role is not None and role.kind == TEST
            self.report(node or expr, test_message(node or expr, role.reason) if test else  # type: ignore[union-attr]
                        index_message(call, expr, selects), evidence=Evidence.SRC)

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) == 1 and gpu_index(node.value):
            key = self._key(node.targets[0].target)
            if key is not None:
                self._indexes.add(key)

    def _holds_index(self, expr: cst.BaseExpression) -> bool:
        key = self._key(expr)
        return key is not None and (key in self._indexes or (id(self.ctx.module), key[1]) in self._indexes)

    def _key(self, target: cst.BaseExpression) -> tuple[int, str] | None:
        """A name in its function (or the module), ``self.name`` in its class."""
        if isinstance(target, cst.Name):
            return id(enclosing_scope(self.ctx)), target.value
        if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self":
            cls = next((a for a in self.ctx.ancestors() if isinstance(a, cst.ClassDef)), None)
            return None if cls is None else (id(cls), f"self.{target.attr.value}")
        return None

    # -- context -------------------------------------------------------------------------------
    def _cuda_only(self) -> bool:
        """The node being visited runs only off Trainium: in the body of ``if device.type ==
        "cuda":``, of ``if torch.cuda.is_available():`` where that check stays, or past the Neuron or
        accelerator check the migration writes (``"neuron" if <Neuron host> else "cuda"``, the
        host-aware fallback of a file that also runs on the CPU)."""
        return in_detection(self.ctx) or in_dispatch_test(self.ctx) or in_fallback_test(self.ctx) \
            or cuda_keeping(self.ctx) is not None or any(
            required(test, self._cuda_atom if in_body else self._trainium_atom)
            for test, in_body in branches(self.ctx.stack))

    def _cuda_atom(self, test: cst.BaseExpression) -> bool:
        if is_cuda_available_call(self.ctx, test):
            # kept for CUDA by the other targets and in a dispatch over devices; on the neuron target
            # NRN110 turns it into the Neuron check, so what it guards runs on Trainium
            return per_target.target(self.ctx) != per_target.NEURON or bool(self.ctx.device_dispatch())
        return cuda_only_test(self.ctx, test)

    def _trainium_atom(self, test: cst.BaseExpression) -> bool:
        return is_neuron_check(test) or (
            isinstance(test, cst.Call) and self.ctx.qualify(test.func) == "torch.accelerator.is_available")


def _entries(container: cst.CSTNode) -> list[cst.CSTNode]:
    """The entries of a list, tuple or set, the keys of a dict, the arguments of ``Literal[...]``."""
    if isinstance(container, cst.Subscript):
        return [e.slice.value for e in container.slice if isinstance(e.slice, cst.Index)]
    if isinstance(container, cst.Dict):
        return [e.key for e in container.elements if isinstance(e, cst.DictElement)]
    return [e.value for e in getattr(container, "elements", ()) if isinstance(e, cst.Element)]
