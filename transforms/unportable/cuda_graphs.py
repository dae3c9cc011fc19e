"""NRN905: CUDA graph capture and replay (``torch.cuda.CUDAGraph``, ``torch.cuda.graph``...)."""

from __future__ import annotations

import re

import libcst as cst

from neuronize.transform import Evidence, Example, Safety, Transform
from neuronize.transforms._helpers.names import last_name

INSTEAD = ("no CUDA graphs on TorchNeuron; remove the capture/replay and call the model directly "
           "(`torch.compile(backend=\"neuron\")` already runs a compiled graph)")

GRAPH_APIS = {
    "torch.cuda.CUDAGraph": "`torch.cuda.CUDAGraph()`",
    "torch.cuda.graphs.CUDAGraph": "`torch.cuda.CUDAGraph()`",
    "torch.cuda.graph": "`torch.cuda.graph(...)` capture",
    "torch.cuda.graphs.graph": "`torch.cuda.graph(...)` capture",
    "torch.cuda.make_graphed_callables": "`torch.cuda.make_graphed_callables(...)`",
    "torch.cuda.graphs.make_graphed_callables": "`torch.cuda.make_graphed_callables(...)`",
    "torch.cuda.graph_pool_handle": "`torch.cuda.graph_pool_handle()`",
    "torch.cuda.graphs.graph_pool_handle": "`torch.cuda.graph_pool_handle()`",
    "torch.compiler.cudagraph_mark_step_begin": "`torch.compiler.cudagraph_mark_step_begin()`",
    "torch._inductor.cudagraph_mark_step_begin": "`torch._inductor.cudagraph_mark_step_begin()`",
    "torch._inductor.cudagraph_trees.mark_step_begin": "`cudagraph_trees.mark_step_begin()`",
}


#: a function named for CUDA graphs (`_init_for_cuda_graphs`, `capture_cudagraph`, `CUDAGraphRunner`)
HELPER_NAME = re.compile(r"cuda_?graph", re.IGNORECASE)
#: a question about graphs, which runs anywhere (`torch.optim.Optimizer._cuda_graph_capture_health_check`,
#: `is_cuda_graph_enabled()`): no helper that sets one up
QUESTION = re.compile(r"check|(?:^|_)(?:is|has|can|use|uses)_|capturing|enabled|supported|available", re.IGNORECASE)


class CudaGraphs(Transform):
    """Finds CUDA graph capture and replay, which has no TorchNeuron equivalent.

    What it does:
        Reports calls of `torch.cuda.CUDAGraph()`, `torch.cuda.graph(...)` (usually a `with`
        block), `torch.cuda.make_graphed_callables(...)`, `torch.cuda.graph_pool_handle()` and
        `torch.compiler.cudagraph_mark_step_begin()` (also its older spellings
        `torch._inductor.cudagraph_mark_step_begin()` and `cudagraph_trees.mark_step_begin()`), in
        any import spelling
        (`from torch.cuda import CUDAGraph`, `import torch as T`). Also reports calls of the
        program's own CUDA-graph helpers, known by their name (`self._init_for_cuda_graphs()`,
        `capture_cudagraphs(model)`, `CUDAGraphRunner(...)`): the call site is what a Neuron path
        must skip, wherever the helper is defined (that finding rests on the name: INF). A
        question about graphs (`self._cuda_graph_capture_health_check()`, the optimizer check
        PyTorch runs on any host; `is_cuda_graph_enabled()`) is not reported.

    Why on TorchNeuron:
        CUDA graphs record CUDA kernel launches for cheap replay. TorchNeuron has no such
        mechanism; the documented way to cut launch overhead is `torch.compile(backend="neuron")`,
        which compiles the model into one Neuron executable (NEFF) reused for the same shapes.

    Example:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            static_out = model(static_in)
        g.replay()

    Use instead:
        Call the model directly (`out = model(x)`), compiled with `torch.compile(backend="neuron")`;
        drop the static input/output buffers and `g.replay()` calls, and
        `torch.compiler.cudagraph_mark_step_begin()`.

    Fix safety:
        Report only: the capture code also sets up static buffers and warm-up streams whose
        removal needs a human.

    Evidence:
        DOC: no CUDA graphs; "remove CUDA-only settings such as CUDA graphs".
    """

    id = "NRN905"
    name = "cuda-graphs"
    safety = Safety.REPORT_ONLY
    evidence = Evidence.DOC
    section = "unsupported"
    effort = "medium"
    references = (
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/compile/how-to-optimize-with-torch-compile.html",
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/frameworks/torch/pytorch-native-overview.html",
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/compile/reference-torch-compile.html",
    )
    tokens = (b"CUDAGraph", b"cuda", b"cudagraph")
    examples = (
        Example("import torch\ng = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    y = m(x)\n", None),
        Example("from torch import compiler\ncompiler.cudagraph_mark_step_begin()\n", None),
    )

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, (cst.Name, cst.Attribute)):
            return
        qualified = self.ctx.qualify(func) or ""
        what = GRAPH_APIS.get(qualified)
        if what is not None:
            self.report(node, f"{what}: {INSTEAD}")
            return
        name = last_name(func) or ""
        if "raph" in name and HELPER_NAME.search(name) and not QUESTION.search(name) \
                and not qualified.startswith("torch."):
            self.report(node, f"`{name}(...)`, by its name a CUDA-graph helper (it sets up, captures or replays "
                        f"CUDA graphs): {INSTEAD}", evidence=Evidence.INF)
