"""NRN909: point-to-point ``torch.distributed`` ops (``send``/``recv``/``isend``/``irecv``...)."""

from __future__ import annotations

import libcst as cst

from neuronize.transform import Evidence, Example, Safety, Transform

P2P = ("send", "recv", "isend", "irecv", "batch_isend_irecv", "P2POp", "send_object_list",
       "recv_object_list")
QUALIFIED = {
    f"{module}.{name}": name
    for module in ("torch.distributed", "torch.distributed.distributed_c10d")
    for name in P2P
}


class PointToPoint(Transform):
    """Finds point-to-point `torch.distributed` ops, whose TorchNeuron support is in doubt.

    What it does:
        Reports calls of `send`, `recv`, `isend`, `irecv`, `batch_isend_irecv`, `P2POp`,
        `send_object_list` and `recv_object_list` from `torch.distributed`, under any alias
        (`import torch.distributed as dist`, `from torch.distributed import isend`). A function
        passed to `P2POp(dist.isend, ...)` is part of the `P2POp` finding.

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

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute):
            leaf = func.attr.value
        elif isinstance(func, cst.Name):
            leaf = func.value
        else:
            return
        if leaf not in P2P:
            return
        name = QUALIFIED.get(self.ctx.qualify(func) or "")
        if name is None:
            return
        self.report(
            node,
            f"`dist.{name}(...)`: point-to-point support on TorchNeuron is unconfirmed (pre-beta report: "
            "none; 2.33 docs advertise pipeline/context parallelism: conflicting evidence); verify on "
            "your release, or use collectives / `torch.distributed.pipelining`",
        )
