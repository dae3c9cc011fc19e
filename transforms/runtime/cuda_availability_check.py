"""NRN110: ``torch.cuda.is_available()`` / ``device_count()`` / ``current_device()`` -> ``torch.accelerator``."""

from __future__ import annotations

from typing import Any

from neuronize.analysis.context import FileContext
from neuronize.transforms._helpers import per_target
from neuronize.transform import Evidence, Example, Safety
import libcst as cst

from neuronize.transforms._helpers.names import qualified_expr
from neuronize.transforms._helpers.nodes import assigned_names, parenthesized
from neuronize.transforms._helpers.cuda_guard import (
    Verdict, flag_uses, guarded_after, guarded_code, named_cuda_device, scan,
)
from neuronize.transforms._helpers.cuda_runtime import (
    Context, CudaRef, _CudaApiRule, capability_probe, classify, printed, probe_kept, spelled, unused_import,
)
from neuronize.transforms._helpers.literals import branches_mention_cuda
from neuronize.transforms._helpers.cpu_target import cpu_answer
from neuronize.transforms._helpers.device_model import in_detection, in_fallback_test

_TARGETS = {
    "is_available": "torch.accelerator.is_available",
    "device_count": "torch.accelerator.device_count",
    "current_device": "torch.accelerator.current_device_index",
}



class CudaAvailabilityCheck(_CudaApiRule):
    """Finds CUDA availability and device-count queries (`torch.cuda.is_available()` and friends).

    What it does:
        Rewrites `torch.cuda.is_available()` to the test "the target's device is here": on the
        neuron target `torch.accelerator.is_available() and
        torch.accelerator.current_accelerator().type == "neuron"` (parenthesised where it becomes
        an operand), on the others `torch.accelerator.is_available()`;
        `torch.cuda.device_count()` to `torch.accelerator.device_count()` (on the neuron target
        `torch.accelerator.device_count() if <the accelerator is Neuron> else torch.cuda.device_count()`: CUDA keeps its count) and
        `torch.cuda.current_device()` to `torch.accelerator.current_device_index()`, in every
        spelling (`import torch as T`, `from torch import cuda`, `from torch.cuda import
        is_available`, a function reference that is not called).

        Where the check decides something, the rule looks at what it decides first:

        - the guarded code (the `if` body and `else`, both branches of a conditional expression,
          the code after `if not ...: raise/return`, every use of a flag the result is stored
          in) uses a CUDA-only path - flash-attn, xformers, bitsandbytes, apex, Triton, DeepSpeed,
          cuDNN or `torch.backends.cuda` flags, `DataParallel`, `GradScaler`, fp16 (`.half()`,
          `torch.float16`), CUDA-only `torch.cuda` APIs: the check is kept and
          reported, because a Neuron-aware check would switch that path on;
        - a test skip marker (`pytest.mark.skipif(not torch.cuda.is_available(), ...)`,
          `unittest.skipUnless`, `if not ...: pytest.skip()`): kept and reported. A CUDA test
          usually exercises CUDA behaviour; mark the device-agnostic ones for Neuron by hand;
        - `"cuda" if torch.cuda.is_available() else "cpu"`: left to the device-placement rules
          (NRN101-109), which rewrite the idiom as one unit;
        - a capability probe (`torch.cuda.is_available() and torch.cuda.get_device_capability()
          >= (8, 0)`, `... and torch.cuda.is_bf16_supported()`, `torch.version.cuda`): the whole
          probe stays CUDA (no operand rewritten), reported;
        - `map_location="cpu" if not torch.cuda.is_available() else None`: left alone, it is right
          as it is (False on Neuron loads CUDA-saved checkpoints onto the host).

    Why on TorchNeuron:
        On Trainium `torch.cuda.is_available()` is False and `torch.cuda.device_count()` is 0, so
        every "use the GPU if there is one" branch silently falls back to the CPU. The
        `torch.accelerator` API sees the Neuron device and still works on CUDA machines. On a
        Mac it sees MPS, where the original code took its CPU path: so on the neuron target the
        test also asks that the accelerator be Neuron, and a device count is 0 elsewhere.

    Example:
        if torch.cuda.is_available():
            torch.cuda.manual_seed_all(seed)
        n_dev = torch.cuda.device_count()

    Use instead:
        if torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "neuron":
            torch.cuda.manual_seed_all(seed)  # NRN112 migrates this line
        n_dev = torch.accelerator.device_count() if torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "neuron" else torch.cuda.device_count()

    Fix safety:
        `is_available()` is safe where the guarded code only selects the device or is otherwise
        transparent (placement, seeding, synchronisation, logging); unsafe where it calls code the
        rule cannot judge, where the result is stored in a flag, returned or passed on. The
        CUDA-only markers are a heuristic: review unsafe fixes. `device_count()` and
        `current_device()` are always unsafe: Neuron counts logical NeuronCores, and under
        `torchrun` with the `neuron` process group each process sees exactly one.

    Evidence:
        DOC: `torch.accelerator` code needs no change on Neuron. SRC: what the count and index mean.
        INF: which guarded code is device-agnostic.
    """

    id = "NRN110"
    targets = per_target.ALL  # torch.accelerator.* runs on every target
    name = "cuda-availability-check"
    safety = Safety.SAFE
    evidence = Evidence.DOC
    section = "review"
    effort = "low"
    references = (
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/index.html",
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/about-pytorch-neuron.html",
    )
    tokens = (b"cuda",)
    FUNCTIONS = frozenset(_TARGETS)
    examples = (
        Example(
            "import torch\nif torch.cuda.is_available():\n    model = model.cuda()\n",
            "import torch\nif torch.accelerator.is_available() and torch.accelerator.current_accelerator().type "
            "== \"neuron\":\n    model = model.cuda()\n",
        ),
        Example(
            "import torch\nif torch.cuda.device_count() > 1:\n    model = torch.nn.DataParallel(model)\n",
            None,
        ),
        Example(
            "import pytest\nimport torch\n\n"
            "@pytest.mark.skipif(not torch.cuda.is_available(), reason=\"needs a GPU\")\n"
            "def test_kernel():\n    pass\n",
            None,
        ),
        Example(
            "from torch import cuda\nn = cuda.device_count()\n",
            "from torch import cuda\nimport torch\n\nn = torch.accelerator.device_count() if torch.accelerator.is_available() and "
            "torch.accelerator.current_accelerator().type == \"neuron\" else cuda.device_count()\n",
        ),
    )

    def target_for(self, ref: CudaRef) -> str | None:
        return _TARGETS[ref.fn] + ("()" if ref.call is not None else "")

    def _in_map_location(self) -> bool:
        """``map_location="cpu" if not torch.cuda.is_available() else None``: false on Neuron gives
        ``"cpu"``, which keeps loading CUDA-saved checkpoints onto the host: right as it is."""
        return any(isinstance(anc, cst.Arg) and anc.keyword is not None and anc.keyword.value == "map_location"
                   for anc in self.ctx.ancestors())

    def rewrite(self, ref: CudaRef, qualified: str, message: str, **kwargs: Any) -> None:
        """``is_available()`` becomes the target's test (``per_target.available``: on the neuron target
        "the accelerator is Neuron", false on a Mac's MPS); ``device_count()`` on the neuron target
        counts only a Neuron accelerator (``... if <Neuron is here> else 0``: a Mac's MPS device
        is no CUDA device either); the rest is renamed."""
        neuron = per_target.target(self.ctx) == per_target.NEURON
        if ref.call is None or ref.fn == "current_device" or (ref.fn == "device_count" and not neuron):
            super().rewrite(ref, qualified, message, **kwargs)
            return
        if any(isinstance(anc, cst.FormattedString) for anc in self.ctx.ancestors()):
            # the test holds a string literal, which an f-string's quotes may not allow
            self.report(ref.outer, f"{message}; inside an f-string: rewrite it by hand", evidence=Evidence.INF)
            return
        available, imports = per_target.available(self.ctx)
        if ref.fn == "device_count":
            count, more = qualified_expr(self.ctx, qualified)
            # the CUDA count stays where the accelerator is not Neuron (0 without CUDA, as before)
            new: cst.BaseExpression = cst.IfExp(
                test=available, body=cst.Call(func=count, args=ref.call.args), orelse=ref.call.with_changes(lpar=(), rpar=()))
            self.fix(ref.call, new.with_changes(lpar=ref.call.lpar, rpar=ref.call.rpar) if ref.call.lpar else (
                new if isinstance(self._call_parent(ref), (cst.Assign, cst.AnnAssign, cst.Return, cst.Arg)) else parenthesized(new)),
                message, imports=(*imports, *more), **kwargs)
            return
        else:
            new = available
        if ref.call.lpar:
            new = new.with_changes(lpar=ref.call.lpar, rpar=ref.call.rpar)
        elif not isinstance(self._call_parent(ref), (cst.If, cst.While, cst.IfExp, cst.Assign, cst.AnnAssign,
                                                           cst.Return, cst.Arg, cst.Expr, cst.Assert)):
            new = parenthesized(new)
        self.fix(ref.call, new, message, imports=(*imports, *unused_import(self.ctx, ref)), **kwargs)

    def _call_parent(self, ref: CudaRef) -> cst.CSTNode | None:
        ancestors = self.ctx.ancestors()
        for anc in ancestors:
            if anc is ref.call:
                return next(ancestors, None)
        return None

    def on_ref(self, ref: CudaRef) -> None:
        if in_detection(self.ctx) or in_fallback_test(self.ctx):
            return  # `if torch.cuda.is_available(): device = "cuda"`: NRN107 puts Neuron in front;
            # `if device == "cuda" and not torch.cuda.is_available(): device = "cpu"` stays
        target = _TARGETS[ref.fn]
        if ref.fn in ("is_available", "device_count") and self._in_map_location():
            return
        answered = cpu_answer(self.ctx, ref.call, ref.fn)
        if answered is not None:
            self.fix(*answered, safety=Safety.UNSAFE, evidence=Evidence.INF)
            return
        probe = capability_probe(self.ctx, ref)
        if probe is not None:
            self.report(ref.outer, probe_kept(ref, probe),
                        evidence=Evidence.INF)
            return
        named = named_cuda_device(self.ctx, ref.outer) if ref.fn in ("is_available", "device_count") else None
        if named is not None:
            self.report(ref.outer, f"{spelled(ref)} checks a device this code already named CUDA (`{named}`): "
                                   "kept, that test is False on Neuron whatever the check says; give Neuron "
                                   "a path of its own by hand", evidence=Evidence.INF)
            return
        shown = f"`{target}()`" if ref.call is not None else f"`{target}`"
        if ref.call is not None and per_target.target(self.ctx) == per_target.NEURON and ref.fn != "current_device":
            shown = "`<the accelerator is Neuron>`"  # per_target.available(): false on a Mac's MPS
            if ref.fn == "device_count":
                shown = f"`{target}() if <the accelerator is Neuron> else {spelled(ref).strip('`')}`"
        head = f"{spelled(ref)} -> {shown}"
        if ref.fn == "current_device":
            self.rewrite(ref, target, f"{head}: under torchrun each process sees one NeuronCore, index 0",
                         safety=Safety.UNSAFE, evidence=Evidence.SRC)
            return
        if printed(self.ctx, ref):
            self.report(ref.outer, f"{spelled(ref)} is printed or logged as a fact about CUDA: kept (a Neuron "
                                   "check would print False on a CUDA host under a CUDA label); report the "
                                   "Neuron device by hand if wanted", evidence=Evidence.INF)
            return
        kind, where = classify(self.ctx, ref)
        if kind is Context.SKIP:
            self.report(ref.outer, f"test skip marker on {spelled(ref)}: kept (CUDA tests usually test "
                                   "CUDA behaviour); enable device-agnostic tests on Neuron by hand",
                        evidence=Evidence.INF)
            return
        if kind is Context.IFEXP and ref.fn == "is_available" and branches_mention_cuda(where):  # type: ignore[arg-type]
            return  # `"cuda" if torch.cuda.is_available() else "cpu"`: NRN101-109 rewrite the idiom
        verdict, flag = _verdict(self.ctx, kind, where)
        if verdict.marker is not None:
            self.report(ref.outer, f"{spelled(ref)} guards a CUDA-only path ({verdict.marker}): kept, a "
                                   f"Neuron-aware check would switch it on; migrate that path first",
                        evidence=Evidence.INF)
            return
        if ref.fn == "device_count":
            detail = "counts visible NeuronCores (1 per process under torchrun)"
            if flag:
                detail += f"; check what {flag} decides"
            elif verdict.opaque:
                detail += f"; check what it decides ({verdict.opaque})"
            self.rewrite(ref, target, f"{head}: {detail}", safety=Safety.UNSAFE, evidence=Evidence.SRC)
            return
        if flag:
            now = "is now true on Neuron" if ref.call is not None else "now checks for any accelerator"
            self.rewrite(ref, target, f"{head}: {flag} {now}; check what it switches on",
                         safety=Safety.UNSAFE, evidence=Evidence.INF)
        elif verdict.opaque is not None:
            self.rewrite(ref, target, f"{head}: check that the guarded code ({verdict.opaque}) runs on Neuron",
                         safety=Safety.UNSAFE, evidence=Evidence.INF)
        else:
            self.rewrite(ref, target, f"{head}: the guarded code selects the device or is device-agnostic")


def _verdict(ctx: FileContext, kind: Context, where: cst.CSTNode | None) -> tuple[Verdict, str]:
    """What the code a check decides holds (:func:`scan`), by where the check sits; and, for a
    stored check, the names that hold it (``"`use_gpu`"``), else ``""``."""
    if kind is Context.IFEXP:
        return scan(ctx, [where]), ""
    if kind is Context.IF:
        return scan(ctx, guarded_code(ctx, where)), ""  # type: ignore[arg-type]
    if kind is Context.FLAG:
        names = assigned_names(where)  # type: ignore[arg-type]
        return (scan(ctx, [where, *flag_uses(ctx, names, where)]),  # type: ignore[arg-type]
                ", ".join(f"`{n}`" for n in names) or "the stored value")
    if kind is Context.ASSERT:
        verdict = scan(ctx, guarded_after(ctx, where))  # type: ignore[arg-type]
        verdict.opaque = verdict.opaque or "the code after the assert"
        return verdict, ""
    return Verdict(opaque="the value is used elsewhere"), ""
