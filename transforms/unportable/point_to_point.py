"""NRN909: point-to-point ``torch.distributed`` ops (``send``/``recv``/``isend``/``irecv``...)."""

from __future__ import annotations

import re

import libcst as cst

from neuronize.transform import Evidence, Example, Safety, Transform

P2P = ("send", "recv", "isend", "irecv", "batch_isend_irecv", "P2POp", "send_object_list",
       "recv_object_list")
QUALIFIED = {
    f"{module}.{name}": name
    for module in ("torch.distributed", "torch.distributed.distributed_c10d")
    for name in P2P
}
#: a project module named like one that re-exports `torch.distributed` (`from torch.distributed
#: import *` in `utils/distributed.py`, `dist` in `parallel/__init__.py`)
REEXPORT = re.compile(r"(?:^|\.)(?:distributed|dist|torch_dist)$")


class PointToPoint(Transform):
    """Finds point-to-point `torch.distributed` ops, whose TorchNeuron support is in doubt.

    What it does:
        Reports calls of `send`, `recv`, `isend`, `irecv`, `batch_isend_irecv`, `P2POp`,
        `send_object_list` and `recv_object_list` from `torch.distributed`, under any alias
        (`import torch.distributed as dist`, `from torch.distributed import isend`), and through a
        project module named like a re-export of `torch.distributed` (`from .utils import
        distributed as dist`, `from mypkg.dist import isend`: a package's own `distributed.py`
        doing `from torch.distributed import *`; that finding says it rests on the name). A
        function passed to `P2POp(dist.isend, ...)` is part of the `P2POp` finding.

    Why on TorchNeuron:
        The evidence conflicts. A third-party report on the pre-beta test drop found no
        point-to-point support in the `neuron` process group (only collectives), while the 2.33
        documentation advertises pipeline and context parallelism, which usually need it.

    Example:
        import torch.distributed as dist
        if rank == 0:
            dist.send(t, dst=1)
        else:
            dist.recv(t, src=0)

    Use instead:
        Verify on your torch-neuronx release first. Otherwise express the exchange with
        collectives (`all_to_all_single`, `all_gather_into_tensor`, `broadcast`) or use
        `torch.distributed.pipelining` instead of hand-written pipeline sends.

    Fix safety:
        Report only: nothing to rewrite until the support is confirmed.

    Evidence:
        3P versus DOC, conflict: pre-beta migration report vs the 2.33 index page.
    """

    id = "NRN909"
    name = "point-to-point"
    safety = Safety.REPORT_ONLY
    evidence = Evidence.THIRD_PARTY
    section = "distributed"
    effort = "medium"
    references = ("https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/index.html",)
    tokens = (b"send(", b"recv(", b"isend", b"irecv", b"P2POp", b"_object_list")
    examples = (
        Example("import torch.distributed as dist\ndist.send(t, dst=1)\n", None),
        Example("from torch import distributed as D\nreqs = D.batch_isend_irecv(ops)\n", None),
    )

    def __init__(self, ctx) -> None:  # type: ignore[no-untyped-def]
        super().__init__(ctx)
        #: local names bound by relative imports to a module named like a re-export (`dist`)
        self._relative: dict[str, str] = {}

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if not node.relative or isinstance(node.names, cst.ImportStar):
            return
        module = "." * len(node.relative) + (cst.helpers.get_full_name_for_node(node.module) or "" if node.module else "")
        for alias in node.names:
            full = f"{module.rstrip('.')}.{cst.helpers.get_full_name_for_node(alias.name)}"
            local = alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else None
            self._relative[local or full.rsplit(".", 1)[-1]] = full

    def _reexported(self, func: cst.BaseExpression) -> str | None:
        """The project module a call goes through when it is named like a torch.distributed re-export."""
        head = func.value if isinstance(func, cst.Attribute) else None
        if isinstance(func, cst.Name):
            full = self._relative.get(func.value) or self.ctx.qualify(func)
            module = full.rsplit(".", 1)[0] if full and "." in full else None
        elif isinstance(head, cst.Name):
            module = self._relative.get(head.value) or self.ctx.qualify(head)
        else:
            return None
        if module is None or module.startswith("torch.") or not REEXPORT.search(module):
            return None
        return module

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute):
            leaf = func.attr.value
        elif isinstance(func, cst.Name):  # by the name it was imported as (`irecv as stage_recv`)
            full = self._relative.get(func.value) or self.ctx.qualify(func) or func.value
            leaf = full.rsplit(".", 1)[-1]
        else:
            return
        if leaf not in P2P:
            return
        name = QUALIFIED.get(self.ctx.qualify(func) or "")
        through = None if name is not None else self._reexported(func)
        if through is not None:
            name = leaf
        if name is None:
            return
        self.report(
            node,
            (f"`{through}.{name}(...)`, by its module's name a re-export of `torch.distributed`: " if through else
             f"`dist.{name}(...)`: ") + "point-to-point support on TorchNeuron is unconfirmed (pre-beta report: "
            "none; 2.33 docs advertise pipeline/context parallelism: conflicting evidence); verify on "
            "your release, or use collectives / `torch.distributed.pipelining`",
            evidence=Evidence.INF if through else None,
        )
