"""The distributed family (NRN4xx) and the XLA-era rule (NRN504): ``torch.distributed``
functions in any spelling, NCCL backend names, and ``import torch_neuronx``."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

import libcst as cst

from neuronize.analysis.context import FileContext
from neuronize.analysis.syntax import scoped_statements
from neuronize.analysis.walk import iter_syntax
from neuronize.transform import Evidence, ImportRequest, Safety, Transform
from neuronize.transforms._helpers import per_target
from neuronize.transforms._helpers.imports import guarded_torch_neuronx_import, import_anchor, has_main_block
from neuronize.transforms._helpers.calls import argument, insert_after, keyword
from neuronize.transforms._helpers.literals import make_string, string_value
from neuronize.transforms._helpers.messages import short
from neuronize.transforms._helpers.value_flow import Assignments, follow


#: the edit group of a file's process-group migration: backend, `set_device` deletion, device ids,
#: `device_id=`; a `"neuron"` process group next to a kept `torch.cuda.set_device` cannot run
PROCESS_GROUP = "process-group"


def cuda_only_test(ctx: FileContext, test: cst.BaseExpression) -> bool:
    """``test`` is true only where CUDA is: it compares a device with ``"cuda"``, reads
    ``.is_cuda``, or asks ``dist.is_nccl_available()`` (false on Trainium). A branch it guards
    keeps its NCCL backend: on Trainium the other branch runs."""
    if isinstance(test, cst.BooleanOperation):
        return cuda_only_test(ctx, test.left) or cuda_only_test(ctx, test.right)
    if isinstance(test, cst.Comparison):
        parts = [test.left, *(c.comparator for c in test.comparisons)]
        positive = all(isinstance(c.operator, (cst.Equal, cst.In, cst.Is)) for c in test.comparisons)
        values = [string_value(p) for p in parts]
        return positive and any(v is not None and v.split(":")[0] == "cuda" for v in values)
    if isinstance(test, cst.Attribute):
        return test.attr.value == "is_cuda"
    if isinstance(test, cst.Call):
        return dist_function(ctx.qualify(test.func)) == "is_nccl_available"
    return False


def in_cuda_only_branch(ctx: FileContext) -> bool:
    """The node the walk is at lies in the branch of an ``if`` / conditional expression that only
    runs on CUDA (:func:`cuda_only_test`)."""
    stack = ctx.stack
    for child, parent in zip(reversed(stack), reversed(stack[:-1]), strict=False):
        if isinstance(parent, cst.If) and child is parent.body and cuda_only_test(ctx, parent.test):
            return True
        if isinstance(parent, cst.IfExp) and child is parent.body and cuda_only_test(ctx, parent.test):
            return True
    return False


#: the functions that start worker processes by index (``mp.spawn(train, nprocs=n)``): they set no
#: ``LOCAL_RANK``, which torchrun sets and the Neuron process group pins each process's core by
WORKER_SPAWNS = frozenset({"torch.multiprocessing.spawn", "torch.multiprocessing.start_processes",
                           "torch.multiprocessing.spawn.spawn", "torch.multiprocessing.spawn.start_processes"})


def worker_spawn(ctx: FileContext) -> cst.Call | None:
    """The call that starts worker processes by index (:data:`WORKER_SPAWNS`) in the scope being
    visited (its function, else the module), or in a function of the file that scope calls; None
    where there is none."""
    key = ("worker-spawns", 0)
    if key not in ctx.memo:
        ctx.memo[key] = _spawning_scopes(ctx) if b"spawn" in ctx.source else {}
    scope = next((a for a in ctx.ancestors() if isinstance(a, cst.FunctionDef)), ctx.module)
    return ctx.memo[key].get(id(scope))


def _spawning_scopes(ctx: FileContext) -> dict[int, cst.Call]:
    """id of each function (or the module) that spawns workers, itself or through a function of
    the file it calls -> the spawning call."""
    calls: dict[int, list[cst.Call]] = {}
    functions: dict[str, int] = {}
    for stmt, outer in scoped_statements(ctx.module.body):
        if isinstance(stmt, cst.FunctionDef):
            functions[stmt.name.value] = id(stmt)
        else:
            calls.setdefault(id(outer[-1] if outer else ctx.module), []).extend(
                node for node in iter_syntax(stmt) if isinstance(node, cst.Call))
    spawning = {scope: call for scope, found in calls.items() for call in reversed(found)
                if ctx.qualify(call.func) in WORKER_SPAWNS}
    for scope, found in calls.items():
        callee = next((functions[c.func.value] for c in found if isinstance(c.func, cst.Name)
                       and functions.get(c.func.value) in spawning), None)
        if scope not in spawning and callee is not None:
            spawning[scope] = spawning[callee]
    return spawning


def dist_function(qualified: str | None) -> str | None:
    """``"init_process_group"`` for ``torch.distributed.init_process_group`` (any module path)."""
    if not qualified:
        return None
    for prefix in ("torch.distributed.distributed_c10d.", "torch.distributed."):
        if qualified.startswith(prefix):
            rest = qualified[len(prefix):]
            return rest if "." not in rest else None
    return None


def nccl_backend(value: str) -> str | None:
    """How a backend string names NCCL: ``"plain"`` (``"nccl"``, ``"cuda:nccl"``),
    ``"mixed"`` (``"cpu:gloo,cuda:nccl"``), or None when it does not."""
    text = value.strip().lower()
    if text in ("nccl", "cuda:nccl"):
        return "plain"
    if "," in text:
        pairs = [p.strip().split(":") for p in text.split(",")]
        if all(len(p) == 2 for p in pairs) and ["cuda", "nccl"] in [[a.strip(), b.strip()] for a, b in pairs]:
            return "mixed"
    return None


def request_torch_neuronx(rule: Transform, safety: Safety, group: str | None = None) -> None:
    """Propose a guarded ``import torch_neuronx`` (``try: ... except ImportError: pass``) as a fix of
    its own, in scripts only (a module with ``if __name__ == "__main__":``).

    The Neuron device autoloads with torch (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/index.html),
    so no module needs the import to use it; the distributed guide still imports it where the
    process group is created, so an entry point gets it, guarded: the script still runs on a host
    without Neuron. A module that other code imports never gets one (issue: an unconditional
    import there breaks every host without Neuron).
    """
    ctx = rule.ctx
    if not per_target.needs_torch_neuronx(ctx) or ctx.names.imports_module("torch_neuronx"):
        return  # --target cpu / accelerator: the output must run without torch_neuronx
    anchor = import_anchor(ctx.module)
    if anchor is None or not has_main_block(ctx.module):
        return
    rule.fix(
        anchor,
        cst.FlattenSentinel([anchor, guarded_torch_neuronx_import()]),
        "adds a guarded `import torch_neuronx` after this line (this file is a script): the distributed "
        "guide imports it where the process group is created; the device itself autoloads",
        safety=safety,
        evidence=Evidence.DOC,
        group=group,
    )



#: what the backend written is, per target
BACKEND_WHY = {
    per_target.NEURON: "the Neuron process-group backend",
    per_target.CPU: "the CPU process-group backend",
    per_target.ACCELERATOR: "the backend of the current device (nccl on CUDA, neuron on Trainium, gloo on CPU)",
}
MIXED_WHY = "the documented Neuron backend; collectives on CPU tensors no longer go through gloo, review them"


@dataclass(frozen=True)
class BackendEdit:
    """The edit of one NCCL backend literal that reaches a process group."""

    node: cst.BaseExpression
    replacement: cst.BaseExpression
    message: str
    safety: Safety
    imports: tuple[ImportRequest, ...]


def backend_edit(ctx: FileContext, literal: cst.BaseExpression) -> BackendEdit:
    """``literal`` (``"nccl"``, ``"cpu:gloo,cuda:nccl"``, ``dist.Backend.NCCL``) as the target's
    process-group backend. A mixed backend is unsafe: collectives on CPU tensors lose gloo. In a
    file that keeps its CUDA hosts, host-aware: ``"neuron" if <Neuron is here> else <literal>``
    (NCCL stays with the CUDA device that the host-aware device choice keeps)."""
    from neuronize.transforms._helpers.device_model import keeps_cuda_hosts
    from neuronize.transforms._helpers.hosts import host_aware

    value = string_value(literal)
    mixed = value is not None and nccl_backend(value) == "mixed"
    replacement, imports = per_target.process_group_backend(ctx, literal)
    why = MIXED_WHY if mixed and per_target.target(ctx) == per_target.NEURON else BACKEND_WHY[per_target.target(ctx)]
    old = f'backend `"{value}"`' if value is not None else "`dist.Backend.NCCL`"
    message = per_target.say(ctx, "{old} -> {backend}: {why}", old=old, why=why)
    if keeps_cuda_hosts(ctx):
        replacement, imports = host_aware(ctx, literal)
        message = (f"{old} -> `\"neuron\" if <the accelerator is Neuron> else {short(literal)}`: {why} on "
                   "Neuron; CUDA hosts keep NCCL, as this file's host-aware device choice keeps them on CUDA")
    return BackendEdit(literal, replacement, message, Safety.UNSAFE if mixed else Safety.SAFE, imports)


def with_neuron_entry(table: cst.Dict) -> cst.Dict | None:
    """A device-to-backend table ``{"cuda": "nccl", ...}`` with ``"neuron": "neuron"`` after its
    ``"cuda"`` entry (which stays for GPU runs); None for any other dict."""
    keys = [string_value(e.key) if isinstance(e, cst.DictElement) else None for e in table.elements]
    if "cuda" not in keys or "neuron" in keys:
        return None
    index = keys.index("cuda")
    element = table.elements[index]
    assert isinstance(element, cst.DictElement)
    value = string_value(element.value)
    if value is None or not nccl_backend(value):
        return None
    new = cst.DictElement(
        key=make_string("neuron", element.key), value=make_string("neuron", element.value),
        whitespace_before_colon=element.whitespace_before_colon,
        whitespace_after_colon=element.whitespace_after_colon,
    )
    return table.with_changes(elements=insert_after(table.elements, index, new))


def names_nccl(ctx: FileContext, expr: cst.BaseExpression) -> bool:
    """``expr`` names the NCCL backend: ``"nccl"``-like strings or ``dist.Backend.NCCL``."""
    value = string_value(expr)
    if value is not None:
        return bool(nccl_backend(value))
    return ctx.qualify(expr) == "torch.distributed.Backend.NCCL"


def nccl_choice(choices: cst.BaseExpression) -> int | None:
    """Where ``"neuron"`` goes in a backend option's ``choices=[...]``: after its ``"nccl"``;
    None when the list has ``"neuron"`` already, or no ``"nccl"``."""
    if not isinstance(choices, (cst.List, cst.Tuple)):
        return None
    values = [string_value(e.value) for e in choices.elements]
    nccl = [i for i, v in enumerate(values) if v is not None and nccl_backend(v) == "plain"]
    return nccl[0] if nccl and "neuron" not in values else None


# -- where backends are used, and the plan of their edits (NRN401) ------------------------------
#: DeepSpeed's process-group set-up: ``deepspeed.init_distributed(dist_backend="nccl")``
DEEPSPEED_INIT = frozenset({"deepspeed.init_distributed", "deepspeed.comm.init_distributed",
                            "deepspeed.comm.comm.init_distributed"})
DEEPSPEED_WHY = ("it reaches DeepSpeed's `init_distributed(dist_backend=...)`, and DeepSpeed has no Neuron "
                 "accelerator: create the process group with `torch.distributed.init_process_group(\"neuron\")` "
                 "before it (DeepSpeed then uses the existing group)")
PG_OPTIONS_WHY = "`pg_options` travel with this backend (options such as `ProcessGroupNCCL.Options` belong to NCCL)"
BRANCH_WHY = ("it is in a branch that only runs on CUDA; on Trainium the other branch runs, so make it give "
              "`\"neuron\"` there (a `\"gloo\"` group has no Neuron tensors)")


def creates_process_group(qualified: str | None) -> str | None:
    """``"init_process_group"`` / ``"new_group"`` for torch.distributed's functions, ``"deepspeed"``
    for DeepSpeed's ``init_distributed``; None for any other call."""
    if qualified in DEEPSPEED_INIT:
        return "deepspeed"
    name = dist_function(qualified)
    return name if name in ("init_process_group", "new_group") else None


def backend_argument(call: cst.Call, kind: str) -> cst.Arg | None:
    """The backend argument of a call :func:`creates_process_group` names."""
    if kind == "deepspeed":
        return argument(call, "dist_backend", 0)
    return argument(call, "backend", 0 if kind == "init_process_group" else 2)


@dataclass(frozen=True)
class BackendUse:
    """A call that creates a process group, seen by the walk: its backend, and what travels with it."""

    call: cst.Call
    kind: str  # "init_process_group", "new_group" or "deepspeed"
    backend: cst.BaseExpression
    scope: cst.CSTNode
    options: bool = False  # `pg_options=` given (not None)
    device_id: cst.Arg | None = None


@dataclass
class BackendPlan:
    """What NRN401 does at the end of a file: literal edits, literals kept (and why), backends it
    cannot follow, ``choices=`` lists that get ``"neuron"``, ``device_id=`` arguments to drop."""

    edits: list[BackendEdit] = field(default_factory=list)
    kept: list[tuple[cst.BaseExpression, str]] = field(default_factory=list)
    unresolved: list[cst.BaseExpression] = field(default_factory=list)
    choices: list[tuple[cst.BaseExpression, int]] = field(default_factory=list)
    device_ids: list[tuple[cst.Call, cst.Arg]] = field(default_factory=list)


def plan_backends(ctx: FileContext, uses: list[BackendUse], seen: Assignments,
                  branch_kept: Collection[int]) -> BackendPlan:
    """The plan for every NCCL backend that reaches a process group in the file (pure: nothing is
    reported here). ``branch_kept`` holds the ids of literals in a branch that only runs on CUDA.

    A literal is kept (reported) when it is in such a branch, travels with ``pg_options``, reaches
    DeepSpeed, or when the name or attribute it came through is also passed to a CUDA-only
    function; one reached only through an attribute or a class default is at most unsafe."""
    plan = BackendPlan()
    why: dict[int, str] = dict.fromkeys(branch_kept, BRANCH_WHY)
    via: dict[int, str | None] = {}
    literals: dict[int, cst.BaseExpression] = {}
    per_use: list[tuple[BackendUse, list[int]]] = []
    for use in uses:
        followed = follow(use.backend, use.scope, ctx.module, seen, lambda e: names_nccl(ctx, e), ctx.qualify)
        if followed.unresolved:
            plan.unresolved.append(use.backend)
        for call in followed.options:
            choices = keyword(call, "choices")
            at = nccl_choice(choices.value) if choices is not None else None
            if choices is not None and at is not None:
                plan.choices.append((choices.value, at))
        ids = []
        for reached in followed.reached:
            key = id(reached.literal)
            ids.append(key)
            literals.setdefault(key, reached.literal)
            if via.get(key, "") is not None:  # reached directly anywhere: direct
                via[key] = reached.via
            if use.kind == "deepspeed":
                why[key] = DEEPSPEED_WHY
            elif use.options:
                why.setdefault(key, PG_OPTIONS_WHY)
            if followed.cuda_only is not None:
                why.setdefault(key, f"`{short(use.backend, None)}` is also passed to `{followed.cuda_only}(...)`, "
                               "which only runs on CUDA")
        per_use.append((use, ids))
    edited: set[int] = set()
    for key, literal in literals.items():
        if key in why:
            plan.kept.append((literal, why[key]))
            continue
        edit = backend_edit(ctx, literal)
        if via.get(key) is not None:
            edit = BackendEdit(edit.node, edit.replacement,
                               f"{edit.message} (reached through `{via[key]}`: other code may set or read it too)",
                               Safety.UNSAFE, edit.imports)
        plan.edits.append(edit)
        edited.add(key)
    for use, ids in per_use:
        if use.device_id is not None and any(i in edited for i in ids):
            plan.device_ids.append((use.call, use.device_id))
    return plan
