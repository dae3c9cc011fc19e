"""NRN114: ``torch.cuda.Stream`` / ``Event`` / ``stream`` / ``current_stream`` / ``default_stream`` -> ``torch.neuron``."""

from __future__ import annotations

from neuronize.transforms._helpers import per_target
from neuronize.transform import Evidence, Example, Safety
from neuronize.transforms._helpers.cuda_runtime import NEURON, CudaRef, _CudaApiRule, spelled, timing_group

FUNCTIONS = ("Stream", "Event", "stream", "current_stream", "default_stream")
#: keywords seen in TorchNeuron's stream/event tests (reference S2, S3)
KNOWN_KEYWORDS = {
    "Stream": frozenset({"device"}),
    "Event": frozenset({"enable_timing", "blocking"}),
}
#: how many positional arguments map onto those keywords
KNOWN_POSITIONAL = {"Stream": 1, "Event": 2}


class CudaStreamEvent(_CudaApiRule):
    """Finds CUDA streams and events (`torch.cuda.Event(enable_timing=True)`, `torch.cuda.stream(s)` ...).

    What it does:
        Rewrites `torch.cuda.Stream`, `Event`, `stream`, `current_stream` and `default_stream`
        to the same names of `torch.neuron`, arguments kept, called or referenced (`isinstance`
        checks, a default argument), in every import spelling, so that every host keeps its
        path: `<the torch.neuron one> if <the accelerator is Neuron> else <the CUDA one>` (a
        statement of its own: `if <Neuron>: ... else: ...`); in a branch only Neuron takes
        (`if on_neuron():`, `elif device.type == "neuron":`) the Neuron call alone; in a branch
        kept for CUDA nothing. Type annotations stay (the CUDA class exists on every host).
        Methods on the objects (`record`, `elapsed_time`, `wait_event`, `wait_stream`,
        `synchronize`, `record_stream`) need no change. A constructor with an argument
        TorchNeuron is not known to accept (`Event(interprocess=True)`, `Stream(priority=-1)`)
        is reported instead.

    Why on TorchNeuron:
        Without CUDA, creating a CUDA stream or event raises, and without torch-neuronx
        `torch.neuron` does not exist: the CUDA box keeps its CUDA events, Trainium gets
        TorchNeuron's stream and event classes in `torch.neuron`, with timing events
        (`enable_timing=True`, `elapsed_time`) and stream contexts.

    Example:
        start = torch.cuda.Event(enable_timing=True)
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            y = model(x)

    Use instead:
        start = torch.neuron.Event(enable_timing=True) if on_neuron() else torch.cuda.Event(enable_timing=True)
        side = torch.neuron.Stream() if on_neuron() else torch.cuda.Stream()
        with (torch.neuron.stream(side) if on_neuron() else torch.cuda.stream(side)):
            y = model(x)

    Fix safety:
        Unsafe: the classes are known from TorchNeuron's tests, and overlapping work on several
        streams depends on runtime support (tests are gated on `requires_nrt_streams`): the code
        runs, but may not overlap as it did on CUDA.

    Evidence:
        SRC: torch-neuronx stream and event tests; streams are mentioned in the distributed guide.
    """

    id = "NRN114"
    name = "cuda-stream-event"
    safety = Safety.UNSAFE
    evidence = Evidence.SRC
    section = "device"
    references = ("https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/guides/torch-distributed.html",)
    tokens = (b"cuda",)
    targets = per_target.ALL
    FUNCTIONS = frozenset(FUNCTIONS)
    examples = (
        Example(
            "import torch\nstart = torch.cuda.Event(enable_timing=True)\nstart.record()\n",
            f"import torch\nstart = torch.neuron.Event(enable_timing=True) if {NEURON} else "
            "torch.cuda.Event(enable_timing=True)\nstart.record()\n",
        ),
        Example(
            "import torch\nwith torch.cuda.stream(side):\n    y = f(x)\n",
            f"import torch\nwith (torch.neuron.stream(side) if {NEURON} else torch.cuda.stream(side)):\n    y = f(x)\n",
        ),
        Example(
            "import torch\nfrom torch.cuda import Event\nmarks = [Event() for _ in range(4)]\n",
            f"import torch\nfrom torch.cuda import Event\nmarks = [(torch.neuron.Event() if {NEURON} else Event()) "
            "for _ in range(4)]\n",
        ),
        # a branch only Neuron takes gets the Neuron call as it is
        Example(
            "import torch\nif device.type == \"neuron\":\n    side = torch.cuda.Stream()\n",
            "import torch\nif device.type == \"neuron\":\n    side = torch.neuron.Stream()\n",
        ),
        Example("import torch\ne = torch.cuda.Event(interprocess=True)\n", None),
    )

    def target_for(self, ref: CudaRef) -> str | None:
        return f"torch.neuron.{ref.fn}"

    def on_ref(self, ref: CudaRef) -> None:
        if per_target.target(self.ctx) != per_target.NEURON:
            self._portable(ref)
            return
        target = f"torch.neuron.{ref.fn}"
        known = KNOWN_KEYWORDS.get(ref.fn)
        if ref.call is not None and known is not None:
            odd = [a.keyword.value for a in ref.call.args if a.keyword is not None and a.keyword.value not in known]
            positional = [a for a in ref.call.args if a.keyword is None]
            if len(positional) > KNOWN_POSITIONAL[ref.fn]:
                odd.append("positional arguments")
            if odd or any(a.star for a in ref.call.args):
                shown = ", ".join(k if " " in k else f"`{k}=`" for k in odd) or "`*args`"
                self.report(ref.outer, f"{spelled(ref)} with {shown}: not known to be accepted by "
                                       f"`{target}`; migrate by hand")
                return
        shown = f"`{target}()`" if ref.call is not None else f"`{target}`"
        note = ""
        if ref.fn in ("Stream", "stream"):
            note = ": overlap across streams depends on Neuron runtime support"
        group = timing_group(self.ctx) if ref.fn == "Event" else None
        self.guarded_rewrite(ref, target, f"{spelled(ref)} -> {shown}{note}", group=group)

    def _portable(self, ref: CudaRef) -> None:
        """``--target cpu`` / ``accelerator``: the device-generic ``torch.Stream`` / ``torch.Event``
        (they take the current accelerator, else the CPU: PyTorch 2.5+), and ``stream`` /
        ``current_stream`` from the device module (``torch.cpu`` has both)."""
        if ref.fn in ("Stream", "Event"):
            target = f"torch.{ref.fn}"
            if ref.call is not None and (any(a.keyword is None or a.star for a in ref.call.args)
                                         or (ref.fn == "Stream" and ref.call.args)):
                self.report(ref.outer, f"{spelled(ref)} with a device or positional arguments: `{target}` "
                                       "takes the device first; migrate by hand")
                return
            shown = f"`{target}()`" if ref.call is not None else f"`{target}`"
            self.rewrite(ref, target, f"{spelled(ref)} -> {shown}: the device-generic class, on the "
                                      "current accelerator or the CPU", evidence=Evidence.DOC)
            return
        module = "torch.cpu" if per_target.target(self.ctx) == per_target.CPU else "torch.get_device_module()"
        if ref.fn in per_target.CPU_MODULE:
            target = f"{module}.{ref.fn}"
            shown = f"`{target}()`" if ref.call is not None else f"`{target}`"
            self.rewrite(ref, target, f"{spelled(ref)} -> {shown}: works with or without an accelerator",
                         evidence=Evidence.DOC)
            return
        self.report(ref.outer, f"{spelled(ref)}: `torch.cpu` has no `{ref.fn}`; use "
                               "`torch.accelerator.current_stream()` where an accelerator is present, by hand")
