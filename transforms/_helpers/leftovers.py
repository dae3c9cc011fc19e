"""What NRN999 (``cuda-leftover``) finds and says: CUDA values left in code, read off single nodes.

Pure functions of nodes and of the walk's stack, tested in tests/test_plans.py. Which of these
values another rule already fixes or reports is not decided here: the engine drops a catch-all
finding on claimed code (:mod:`neuronize.decision.claims`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence

import libcst as cst

from neuronize.transforms._helpers.calls import MESSAGE_CALL_NAMES
from neuronize.transforms._helpers.distributed import nccl_backend
from neuronize.transforms._helpers.literals import cuda_literal, string_value
from neuronize.transforms._helpers.messages import short
from neuronize.transforms._helpers.names import last_name, target_name

DEVICE, BACKEND, STRATEGY = "device", "backend", "strategy"
#: device types (and GPU architectures): a list of several is the devices a program accepts
DEVICE_TYPES = frozenset({"cuda", "cpu", "mps", "xpu", "neuron", "meta", "hpu", "npu", "xla", "mtia", "rocm", "hip"})
#: process-group backends besides NCCL: a list of several is the backends a program accepts
BACKENDS = frozenset({"nccl", "gloo", "mpi", "ucc", "xccl", "hccl", "neuron"})
#: names that hold a GPU index: `local_rank`, `rank`, `gpu`, `gpu_id`, `device_id`, `cuda_idx`...
GPU_INDEX = re.compile(r"^(?:local_?)?rank$|^(?:local_)?gpu(?:_?(?:id|idx|index|rank))?$"
                       r"|^(?:device|dev|cuda)_?(?:id|idx|index)$", re.IGNORECASE)
#: a list of GPU indices (``opt.gpu_ids``, ``device_ids``, ``gpus``): an item of it is one
GPU_INDICES = re.compile(r"^(?:gpu|device|cuda)_?ids$|^gpus$", re.IGNORECASE)
#: device-agnostic current-device selection, which takes an index
SELECTORS = frozenset({"torch.accelerator.set_device_index", "torch.accelerator.device_index"})
#: FSDP, whose `device_id=` is a device: an integer there is an index like `.to(local_rank)`
FSDP = frozenset({"torch.distributed.fsdp.FullyShardedDataParallel",
                  "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel"})
#: calls that return a process or GPU index
INDEX_CALLS = frozenset({"int", "get_rank", "get_local_rank"})
#: a name (keyword, parameter, variable, call) whose "cuda" is a label, not a device: a timer
#: type, a metrics label or tag, a statistic's name
LABEL_NAME = re.compile(r"(?:^|_)(?:timers?|labels?|metrics?|tags?|stats?|counters?|gauges?|histograms?)(?:_|$)",
                        re.IGNORECASE)
#: an RWKV-style placement strategy: `"cuda fp16"`, `"cuda fp16i8 *10 -> cpu fp32"`
_STRATEGY = re.compile(r"\bcuda(?::\d+)?\s+(?:fp|bf)(?:16|32)")
#: calls whose arguments are text for people, not values the code uses
MESSAGE_CALLS = MESSAGE_CALL_NAMES | {"error", "critical", "exception"}
#: a list assigned to a name like this validates (or documents) what the program accepts
_VALIDATING_NAME = re.compile(r"support|allow|valid|choice|accept|known", re.IGNORECASE)

ONE_DEVICE = "a Neuron process under torchrun sees one device (index 0)"
ADVICE = {
    DEVICE: f"use the device the file chose (`\"neuron\"` or its device variable) without an index: {ONE_DEVICE}",
    "map_location": f"load onto `\"cpu\"` or onto the device the model uses (`\"neuron\"`, no index: {ONE_DEVICE})",
    "device_types": "a kernel registered for CUDA only: Neuron needs its own (an NKI kernel) or the "
                    "op's CPU/composite path",
    STRATEGY: "a layer-placement strategy string (RWKV style) puts the model on CUDA; whether the library "
              "accepts `neuron` there is not established: place it on `cpu` or run the model's PyTorch code on "
              "`\"neuron\"` by hand",
    BACKEND: "make it `\"neuron\"` on Trainium (`torch.distributed.get_default_backend_for_device(device)` where "
             "the code must also run on CUDA or CPU)",
}


def cuda_value(node: cst.CSTNode) -> str | None:
    """``DEVICE`` for a CUDA device literal (``"cuda:0"``, ``f"cuda:{rank}"``...), ``BACKEND`` for
    an NCCL backend name (``"nccl"``, ``"cpu:gloo,cuda:nccl"``), else None."""
    if cuda_literal(node) is not None:
        return DEVICE
    value = string_value(node)
    if value is not None and "cuda " in value and _STRATEGY.search(value):
        return STRATEGY
    return BACKEND if value is not None and nccl_backend(value) else None


def compared_device(stack: Sequence[cst.CSTNode]) -> bool:
    """The value at the end of ``stack`` (a device string, ``torch.device(...)`` itself, a backend
    name) is an operand of a comparison, perhaps through ``torch.device(...)`` and its ``.type``
    (``self.device.type == torch.device("cuda").type``, ``get_backend(group) !=
    dist.Backend.NCCL``): it asks what a device or a group is, like ``device == "cuda"`` (NRN103's),
    and names nothing to run on."""
    for child, parent in zip(reversed(stack), reversed(stack[:-1]), strict=False):
        if isinstance(parent, (cst.Comparison, cst.ComparisonTarget)):
            return True
        through_call = isinstance(parent, cst.Arg) or isinstance(parent, cst.Call) and last_name(parent.func) == "device"
        if not (through_call or isinstance(parent, cst.Attribute) and parent.value is child):
            return False
    return False


def labels(stack: Sequence[cst.CSTNode]) -> bool:
    """The value at the end of ``stack`` is a label, not a device: a member of an enumeration
    (`class TimerKind(Enum): CUDA = "cuda"`), or given to a keyword, parameter, variable or call
    named as a label (`timer_type="cuda"`, `metrics.labels(backend="cuda")`, `STAT_TAG = "cuda"`)."""
    for child, parent in zip(reversed(stack), reversed(stack[:-1]), strict=False):
        name = None
        if isinstance(parent, cst.Arg) and parent.keyword is not None:
            name = parent.keyword.value
        elif isinstance(parent, cst.Param):
            name = parent.name.value
        elif isinstance(parent, (cst.Assign, cst.AnnAssign)) and child is parent.value:
            target = parent.targets[0].target if isinstance(parent, cst.Assign) else parent.target
            name = target_name(target)
        elif isinstance(parent, cst.Call):
            name = last_name(parent.func)
        elif isinstance(parent, cst.ClassDef):
            return any((last_name(base.value) or "").endswith("Enum") for base in parent.bases)
        elif isinstance(parent, (cst.FunctionDef, cst.Lambda)):
            return False
        if name and "device" not in name.lower() and LABEL_NAME.search(name):
            return True
    return False


def test_message(node: cst.CSTNode, reason: str) -> str:
    """A leftover in test code, said the way the other rules say it (one line per reason)."""
    return (f"`{short(node)}`: CUDA-specific value in test code ({reason}); tests are the spec of what worked and "
            "are left as they are: port a CUDA-only test to Neuron, or skip it there, by hand")


def listed(values: Sequence[str | None]) -> str | None:
    """What a literal collection of these strings lists, device-agnostically: ``DEVICE`` types
    (CUDA and another type: ``["cpu", "cuda"]``) or ``BACKEND`` names (NCCL and another); else None
    (a lone ``("cuda:0",)`` is CUDA code, not a list of choices)."""
    words = [v.lower() for v in values if v is not None]
    types = {head for head, _, index in (w.partition(":") for w in words)
             if head in DEVICE_TYPES and (not index or index.isdigit())}
    if "cuda" in types and len(types) > 1:
        return DEVICE
    backends = {w for w in words if w in BACKENDS or nccl_backend(w)}
    return BACKEND if "nccl" in backends and len(backends) > 1 else None


def validates(container: cst.CSTNode, stack: Sequence[cst.CSTNode]) -> bool:
    """``container`` (at the end of ``stack``) is a list of what the program accepts: a
    ``choices=`` value, the right side of ``in`` / ``not in``, a ``Literal[...]`` type, or a value
    assigned to a name such as ``SUPPORTED_DEVICES``; a dict keyed by devices is a lookup table."""
    if isinstance(container, (cst.Dict, cst.Subscript)):
        return True
    parent = stack[-2] if len(stack) > 1 else None
    if isinstance(parent, cst.Arg):
        return parent.keyword is not None and parent.keyword.value == "choices"
    if isinstance(parent, cst.ComparisonTarget):
        return isinstance(parent.operator, (cst.In, cst.NotIn))
    if isinstance(parent, (cst.Assign, cst.AnnAssign)):
        targets = [t.target for t in parent.targets] if isinstance(parent, cst.Assign) else [parent.target]
        return any(_VALIDATING_NAME.search(target_name(t) or "") for t in targets)
    return False


def gpu_index(expr: cst.BaseExpression) -> bool:
    """``expr`` reads as a GPU index: a non-zero integer, a name such as ``local_rank``,
    ``args.gpu``, ``self.gpu_id``, ``int(...)``, ``dist.get_rank()``, an item of a list of GPU
    indices (``opt.gpu_ids[0]``), or arithmetic on one (``rank % n``). ``0`` is not: an integer
    device is an index on the current accelerator, and a Neuron process's one device is index 0."""
    if isinstance(expr, cst.Integer):
        return expr.evaluated_value != 0
    if isinstance(expr, (cst.Name, cst.Attribute)):
        return bool(GPU_INDEX.match(last_name(expr) or ""))
    if isinstance(expr, cst.Call):
        return last_name(expr.func) in INDEX_CALLS
    if isinstance(expr, cst.BinaryOperation):
        return gpu_index(expr.left)
    if isinstance(expr, cst.Subscript):
        return bool(GPU_INDICES.match(last_name(expr.value) or ""))
    return False


def gpu_indexed_device(node: cst.FormattedString) -> cst.BaseExpression | None:
    """The GPU index of a device string built as ``f"{device.type}:{args.gpu}"``, else None."""
    parts = node.parts
    if (len(parts) == 3 and isinstance(parts[1], cst.FormattedStringText) and parts[1].value == ":"
            and isinstance(parts[0], cst.FormattedStringExpression)
            and isinstance(parts[2], cst.FormattedStringExpression) and gpu_index(parts[2].expression)):
        return parts[2].expression
    return None


def in_message(stack: Sequence[cst.CSTNode]) -> bool:
    """The node at the end of ``stack`` is an argument of ``print``, a logging call or ``warn``."""
    return len(stack) > 2 and isinstance(stack[-2], cst.Arg) and isinstance(stack[-3], cst.Call) \
        and last_name(stack[-3].func) in MESSAGE_CALLS


def branches(stack: Sequence[cst.CSTNode]) -> Iterator[tuple[cst.BaseExpression, bool]]:
    """The tests of the ``if`` statements and conditional expressions the node at the end of
    ``stack`` is in a branch of, innermost first, each with whether the node is in its body."""
    for child, parent in zip(reversed(stack), reversed(stack[:-1]), strict=False):
        if isinstance(parent, (cst.If, cst.IfExp)) and child is not parent.test:
            yield parent.test, child is parent.body


def required(test: cst.BaseExpression, atom: Callable[[cst.BaseExpression], bool]) -> bool:
    """``test`` is true only when ``atom`` holds for one of its ``and`` operands."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return required(test.left, atom) or required(test.right, atom)
    return atom(test)


def is_neuron_check(test: cst.BaseExpression) -> bool:
    """``<device type> == "neuron"``: the check the migration writes for "this is a Neuron host"."""
    return isinstance(test, cst.Comparison) and len(test.comparisons) == 1 \
        and isinstance(test.comparisons[0].operator, cst.Equal) and string_value(test.comparisons[0].comparator) == "neuron"


def site(stack: Sequence[cst.CSTNode]) -> tuple[str, str | None]:
    """Where the node at the end of ``stack`` sits, for a message (``"assigned to `loc`"``), and
    the keyword of the argument it reaches (``"map_location"``), if any."""
    for child, parent in zip(reversed(stack), reversed(stack[:-1]), strict=False):
        if isinstance(parent, cst.Arg) and parent.keyword is not None:
            return f"`{parent.keyword.value}=` argument", parent.keyword.value
        if isinstance(parent, cst.Arg):
            return "a call argument", None
        if isinstance(parent, (cst.Assign, cst.AnnAssign, cst.AugAssign)) and child is parent.value:
            target = parent.targets[0].target if isinstance(parent, cst.Assign) else parent.target
            return f"assigned to `{short(target, 40)}`", None
        if isinstance(parent, cst.Param):
            return f"default of `{parent.name.value}`", None
        if isinstance(parent, cst.Return):
            return "returned", None
        if isinstance(parent, (cst.BaseStatement, cst.BaseSmallStatement, cst.Lambda)):
            break
    return "", None


def leftover_message(kind: str, node: cst.CSTNode, where: str, keyword: str | None = None) -> str:
    """The finding for a CUDA ``kind`` of value (``DEVICE`` / ``BACKEND``) left at ``node``, given
    to an argument ``keyword`` (``map_location``, a kernel's ``device_types``) or not."""
    what = {DEVICE: "CUDA device", BACKEND: "NCCL backend name", STRATEGY: "CUDA placement strategy"}[kind]
    place = f" ({where})" if where else ""
    advice = ADVICE[keyword if kind == DEVICE and keyword in ADVICE else kind]
    return f"{what} `{short(node)}` left in the code{place}: no other rule migrates it here; {advice}"


def list_message(kind: str, container: cst.CSTNode) -> str:
    what = "devices, CUDA among them" if kind == DEVICE else "process-group backends, NCCL among them"
    return (f"`{short(container, 60)}` lists {what}, but not `\"neuron\"`: add it if a run on Trainium must "
            "pass this check (or find an entry here)")


#: the device of `init_process_group(device_id=torch.device(device_type, local_rank))`
PG_DEVICE_ID = "`init_process_group(device_id=torch.device(...))`"


def pg_device_id(stack: Sequence[cst.CSTNode]) -> bool:
    """The call at the end of ``stack`` is the ``device_id=`` of ``init_process_group``."""
    return len(stack) > 2 and isinstance(stack[-2], cst.Arg) and stack[-2].keyword is not None \
        and stack[-2].keyword.value == "device_id" and last_name(stack[-3].func) == "init_process_group"  # type: ignore[attr-defined]


def index_message(call: str, index: cst.BaseExpression, selects: bool = False) -> str:
    """A GPU index given as a device (or, ``selects``, to select the current device)."""
    advice = ("delete the call where the `\"neuron\"` process group runs (it pins each process to its NeuronCore)"
              if selects else "PyTorch needs an index here: give 0 where the device type is `neuron` "
              f"(`0 if device_type == \"neuron\" else {short(index, 30)}`), or drop `device_id=` there"
              if call == PG_DEVICE_ID else "pass the device (`\"neuron\"` or the file's device variable) instead")
    return (f"{call} gets the GPU index `{short(index, 40)}`: an integer device is an index on the current "
            f"accelerator, and {ONE_DEVICE}: any other index fails; {advice}")
