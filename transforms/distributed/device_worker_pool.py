"""NRN408: a pool of worker processes whose task places work on a device."""

from __future__ import annotations

import libcst as cst

from neuronize.analysis.context import FileContext
from neuronize.analysis.walk import iter_syntax
from neuronize.decision.policy import WORKER_POOL
from neuronize.transform import Evidence, Example, Safety, Transform
from neuronize.transforms._helpers.calls import argument, keyword, partial_function
from neuronize.transforms._helpers.device_model import pins_outside_cuda_code
from neuronize.transforms._helpers.messages import short
from neuronize.transforms._helpers.names import last_name

#: the classes whose instances run a task in several worker processes
POOLS = frozenset({"multiprocessing.Pool", "multiprocessing.pool.Pool", "torch.multiprocessing.Pool",
                   "concurrent.futures.ProcessPoolExecutor"})
#: the methods that hand a pool its task, the function first
TASK_METHODS = frozenset({"map", "imap", "imap_unordered", "starmap", "map_async", "starmap_async", "apply",
                          "apply_async", "submit"})


class DeviceWorkerPool(Transform):
    """Finds pools of worker processes whose task places work on a device.

    What it does:
        Reports `pool.map(task, ...)` (and `imap`, `imap_unordered`, `starmap`, `apply_async`,
        `submit`...) of a `multiprocessing.Pool`, `torch.multiprocessing.Pool` or
        `concurrent.futures.ProcessPoolExecutor`, where the task is a function of the file
        (directly or through `functools.partial`) that places work on a device: it moves tensors
        or modules (`.cuda()`, `device=`, `torch.device(...)`) or hands on a device value. Such
        pools run feature extraction or preprocessing over many files, several workers at once.
        The device edits of the file wait for it.

    Why on TorchNeuron:
        The first process that uses the `neuron` device starts the Neuron runtime, which takes the
        NeuronCores it is given (all of the instance unless `NEURON_RT_VISIBLE_CORES` or
        `NEURON_RT_NUM_CORES` says otherwise), and a core held by one process cannot be used by
        another until it exits. Where GPU workers share one device, the second Neuron worker
        finds no core free. Before the migration the same workers ran on the CPU of a Trainium
        host; moved alone, the program would fail there.

    Example:
        with Pool(processes=4) as pool:
            pool.map(extract, files)  # extract() runs a model on `device`

    Use instead:
        Give each worker cores of its own in the pool's `initializer` (set
        `NEURON_RT_VISIBLE_CORES` from the worker's index before torch touches the device), or
        run the device work in one process and keep the pool for the CPU work.

    Fix safety:
        Report only; it holds the device edits of its file back.

    Evidence:
        DOC: a NeuronCore reserved by one process cannot be used by another, and the runtime's
        core variables (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/neuron-runtime/api/nrt-env-var-reference.html).
        INF: each worker that uses the device starts a runtime of its own.
    """

    id = "NRN408"
    name = "device-worker-pool"
    safety = Safety.REPORT_ONLY
    evidence = Evidence.INF
    section = "distributed"
    effort = "medium"
    references = ("https://awsdocs-neuron.readthedocs-hosted.com/en/latest/neuron-runtime/api/nrt-env-var-reference.html",)
    tokens = (b"Pool",)
    examples = (
        Example("import torch\nfrom multiprocessing import Pool\n\n\ndef embed(path):\n"
                "    return model(torch.load(path).to(device))\n\n\nwith Pool(4) as pool:\n"
                "    pool.map(embed, paths)\n"),
        Example("from multiprocessing import Pool\n\n\ndef resize(path):\n    return open(path).read()\n\n\n"
                "with Pool(4) as pool:\n    pool.map(resize, paths)\n", finds=False),
    )

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value in TASK_METHODS and self._is_pool(func.value)):
            return
        task = argument(node, "func", 0) or keyword(node, "fn")
        name = _task_name(self.ctx, task.value) if task is not None else None
        if name is None or not _places_work(_functions(self.ctx).get(name)):
            return
        self.report(node, f"`{short(node, 50)}`: each worker runs `{name}`, which places work on a device; on "
                          "Trainium the first worker's Neuron runtime takes the NeuronCores and the others find "
                          "none free: give each worker its own cores (`NEURON_RT_VISIBLE_CORES` in the pool's "
                          "initializer) or do the device work in one process; the device edits of this file wait "
                          "for it", pins=pins_outside_cuda_code(self.ctx, WORKER_POOL))

    def _is_pool(self, value: cst.BaseExpression) -> bool:
        if isinstance(value, cst.Call):
            return self.ctx.qualify(value.func) in POOLS
        return isinstance(value, cst.Name) and value.value in _pool_names(self.ctx)


def _pool_names(ctx: FileContext) -> frozenset[str]:
    """The names the file binds to a pool it makes (``with Pool(4) as pool:``, ``pool = Pool(4)``)."""
    key = ("pool names", 0)
    if key not in ctx.memo:
        names = set()
        for node in iter_syntax(ctx.module):
            if isinstance(node, cst.WithItem) and isinstance(node.item, cst.Call) and node.asname is not None \
                    and isinstance(node.asname.name, cst.Name) and ctx.qualify(node.item.func) in POOLS:
                names.add(node.asname.name.value)
            elif isinstance(node, cst.Assign) and isinstance(node.value, cst.Call) \
                    and ctx.qualify(node.value.func) in POOLS:
                names.update(t.target.value for t in node.targets if isinstance(t.target, cst.Name))
        ctx.memo[key] = frozenset(names)
    return ctx.memo[key]


def _task_name(ctx: FileContext, task: cst.BaseExpression) -> str | None:
    """The name of the function a pool runs: ``task`` itself, or the first argument of a
    ``functools.partial`` around it."""
    task = partial_function(ctx, task) or task
    return task.value if isinstance(task, cst.Name) else None


def _functions(ctx: FileContext) -> dict[str, cst.FunctionDef]:
    """The functions the file defines at its top level, by name."""
    key = ("top-level functions", 0)
    if key not in ctx.memo:
        ctx.memo[key] = {s.name.value: s for s in ctx.module.body if isinstance(s, cst.FunctionDef)}
    return ctx.memo[key]


def _places_work(function: cst.FunctionDef | None) -> bool:
    """``function`` moves tensors or modules to a device (``.cuda()``, ``device=``,
    ``torch.device(...)``) or reads a device value (a name or attribute called ``device``)."""
    if function is None:
        return False
    for node in iter_syntax(function.body):
        if isinstance(node, cst.Call) and last_name(node.func) in ("cuda", "device"):
            return True
        if isinstance(node, cst.Arg) and node.keyword is not None and node.keyword.value == "device":
            return True
        if isinstance(node, cst.Name) and (node.value == "device" or node.value.endswith("_device")):
            return True
        if isinstance(node, cst.Attribute) and node.attr.value == "device":
            return True
    return False
