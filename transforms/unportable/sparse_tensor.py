"""NRN906: sparse tensors (``torch.sparse_coo_tensor``, ``.to_sparse()``, ``torch.sparse.*``...)."""

from __future__ import annotations

import libcst as cst

from neuronize.transform import Evidence, Example, Safety, Transform
from neuronize.transforms._helpers.literals import switches_off

WHY = "no sparse-tensor support is documented for TorchNeuron"
DENSE = "keep the tensor dense (`index_add_`/`scatter_add_`/dense matmul) or run this step on CPU"

FACTORIES = frozenset(
    f"torch.{name}"
    for name in ("sparse_coo_tensor", "sparse_csr_tensor", "sparse_csc_tensor", "sparse_bsr_tensor",
                 "sparse_bsc_tensor", "sparse_compressed_tensor")
)
LAYOUTS = frozenset(f"torch.{name}" for name in ("sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr",
                                                   "sparse_bsc"))
TO_SPARSE = frozenset({"to_sparse", "to_sparse_coo", "to_sparse_csr", "to_sparse_csc", "to_sparse_bsr",
                       "to_sparse_bsc"})
EMBEDDINGS = frozenset({
    "torch.nn.Embedding", "torch.nn.EmbeddingBag", "torch.nn.Embedding.from_pretrained",
    "torch.nn.EmbeddingBag.from_pretrained", "torch.nn.functional.embedding",
    "torch.nn.functional.embedding_bag", "torch.nn.modules.sparse.Embedding",
})
SPARSE_OPTIMIZERS = frozenset({"torch.optim.SparseAdam"})


class SparseTensor(Transform):
    """Finds sparse tensors, sparse ops and sparse gradients, which TorchNeuron does not document.

    What it does:
        Reports `torch.sparse_coo_tensor(...)` and the other sparse constructors, calls into
        `torch.sparse.*` (`torch.sparse.mm`, `torch.sparse.sum`...), `.to_sparse()` /
        `.to_sparse_csr()`... method calls in files that import torch, `layout=torch.sparse_*`
        arguments, `nn.Embedding(..., sparse=True)` (sparse gradients) and
        `torch.optim.SparseAdam`.

    Why on TorchNeuron:
        No source read for the reference mentions sparse layouts on Neuron; treat them as
        unsupported until the op-support table says otherwise. Unsupported ops fall back to the
        CPU silently (slow) or fail.

    Example:
        adj = torch.sparse_coo_tensor(indices, values, (n, n))
        emb = nn.Embedding(vocab, dim, sparse=True)

    Use instead:
        Dense tensors: `torch.zeros(n, n).index_put_(...)`, `index_add_` / `scatter_add_`, a dense
        matmul; `nn.Embedding(..., sparse=False)` with `torch.optim.AdamW`. Or keep the sparse
        step on CPU.

    Fix safety:
        Report only: densifying changes memory use and may change the algorithm.

    Evidence:
        INF: sparse tensors: nothing found in any source.
    """

    id = "NRN906"
    name = "sparse-tensor"
    safety = Safety.REPORT_ONLY
    evidence = Evidence.INF
    section = "unsupported"
    effort = "high"
    references = ("https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/index.html",)
    tokens = (b"sparse",)
    examples = (
        Example("import torch\nadj = torch.sparse_coo_tensor(idx, val, (n, n))\n", None),
        Example("import torch\nx = dense.to_sparse()\n", None),
        Example("from torch import nn\nemb = nn.Embedding(1000, 64, sparse=True)\n", None),
    )

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        qualified = self.ctx.qualify(func)
        if qualified is None:
            if (isinstance(func, cst.Attribute) and func.attr.value in TO_SPARSE
                    and self.ctx.names.imports_module("torch")):
                self.report(node, f"`.{func.attr.value}()`: {WHY}; {DENSE}")
            return
        if qualified in FACTORIES:
            self.report(node, f"`{qualified}(...)`: {WHY}; {DENSE}")
            return
        if qualified.startswith("torch.sparse."):
            self.report(node, f"`{qualified}(...)`: {WHY}; {DENSE}")
            return
        if qualified in SPARSE_OPTIMIZERS:
            self.report(node, f"`{qualified}(...)` needs sparse gradients ({WHY}); "
                              "use `torch.optim.AdamW` with dense gradients")
            return
        for arg in node.args:
            if arg.keyword is None:
                continue
            if arg.keyword.value == "layout" and self.ctx.qualify(arg.value) in LAYOUTS:
                self.report(arg, f"`layout={self.ctx.qualify(arg.value)}`: {WHY}; {DENSE}")
            elif (arg.keyword.value == "sparse" and qualified in EMBEDDINGS
                  and not switches_off(arg.value)):
                self.report(arg, f"`sparse=` embedding gradients are sparse tensors ({WHY}); "
                                 "use `sparse=False` and a dense optimizer such as `torch.optim.AdamW`")
