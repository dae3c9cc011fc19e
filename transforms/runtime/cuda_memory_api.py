"""NRN113: ``torch.cuda`` memory statistics and cache control -> ``torch_neuronx`` / ``torch.neuron``."""

from __future__ import annotations

from neuronize.transforms._helpers import per_target
from neuronize.transform import Evidence, Example, Safety
from neuronize.transforms._helpers.cuda_runtime import CudaRef, _CudaApiRule, spelled

#: torch.cuda name -> TorchNeuron name (reference M1, M2); deprecated CUDA aliases included
MAPPED = {
    "memory_allocated": "torch_neuronx.memory_allocated",
    "max_memory_allocated": "torch_neuronx.max_memory_allocated",
    "memory_reserved": "torch_neuronx.memory_reserved",
    "max_memory_reserved": "torch_neuronx.max_memory_reserved",
    "memory_cached": "torch_neuronx.memory_reserved",
    "max_memory_cached": "torch_neuronx.max_memory_reserved",
    "memory_stats": "torch_neuronx.memory_stats",
    "memory_summary": "torch_neuronx.memory_summary",
    "reset_peak_memory_stats": "torch_neuronx.reset_peak_memory_stats",
    "reset_max_memory_allocated": "torch_neuronx.reset_peak_memory_stats",
    "reset_max_memory_cached": "torch_neuronx.reset_peak_memory_stats",
    "reset_accumulated_memory_stats": "torch_neuronx.reset_accumulated_memory_stats",
    "empty_cache": "torch.neuron.empty_cache",
}
#: no TorchNeuron counterpart known (reference M3, M4)
#: memory functions ``torch.accelerator`` has under the same name (PyTorch >= 2.9)
ACCELERATOR_MEMORY = frozenset({
    "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
    "memory_stats", "reset_peak_memory_stats", "reset_accumulated_memory_stats", "empty_cache",
})
UNMAPPED = {
    "mem_get_info": "no TorchNeuron equivalent known; compute free memory another way "
                    "(`torch_neuronx.get_device_properties(i).total_memory` minus "
                    "`torch_neuronx.memory_reserved()`) or drop the check",
    "OutOfMemoryError": "Neuron's out-of-memory exception type is unknown, so this will not catch a "
                        "Neuron OOM; catch `RuntimeError` too, and test it",
    "set_per_process_memory_fraction": "no TorchNeuron equivalent known; NeuronCores on a chip "
                                       "share its HBM, limit memory another way or remove it",
}


class CudaMemoryApi(_CudaApiRule):
    """Finds CUDA memory statistics, cache control and out-of-memory handling (`torch.cuda.memory_allocated` ...).

    What it does:
        Rewrites the caching-allocator statistics (`memory_allocated`, `max_memory_allocated`,
        `memory_reserved`, `max_memory_reserved`, `memory_stats`, `memory_summary`,
        `reset_peak_memory_stats`, `reset_accumulated_memory_stats`, and the deprecated
        `memory_cached` / `max_memory_cached` / `reset_max_memory_*` aliases) to the same function
        of `torch_neuronx`, adding `import torch_neuronx`; and `torch.cuda.empty_cache()` to
        `torch.neuron.empty_cache()` where the accelerator is Neuron (the call Hugging Face
        Accelerate makes there), CUDA's call kept for every other host, so CUDA keeps freeing its
        cache and Neuron frees its own. Arguments are kept; references that are not calls are
        rewritten too (a table of per-backend cache cleaners keyed by `"cuda"` is reported
        instead). Reports `torch.cuda.mem_get_info()`, `torch.cuda.OutOfMemoryError` handlers
        and `torch.cuda.set_per_process_memory_fraction()`, which have no known counterpart.

    Why on TorchNeuron:
        Without CUDA these functions return zeros or raise, so memory logging lies and
        out-of-memory handling never triggers. TorchNeuron's caching allocator exposes the same
        statistics from the `torch_neuronx` package (the memory-profiling guide). Its allocator
        is asynchronous: call `torch.accelerator.synchronize()` before reading a statistic.

        On the neuron target the calls keep the no-op property CUDA gives them on a host without
        CUDA (`torch.neuron` and `torch_neuronx` do not exist there): a `torch.neuron` call inside
        an `if torch.cuda.is_available():` (which NRN110 turns into "the accelerator is Neuron") or
        a `device.type == "cuda"` guard that follows it (NRN103) is rewritten in place; a call that
        is a statement of its own gets the guard `if hasattr(torch, "accelerator") and
        torch.accelerator.is_available() and torch.accelerator.current_accelerator().type ==
        "neuron":`, with a local `import
        torch_neuronx` inside it where needed (never an unconditional one), and keeps the CUDA
        call in its `else:` (CUDA keeps the effect); a value read elsewhere (`peak =
        torch.cuda.max_memory_allocated()`) is reported. A call in a branch kept for CUDA (`if
        device == "cuda":` around CUDA-only code, a dispatch's CUDA branch, the CUDA arm of `...
        if device == "cuda" else ...`) is left as it is; `torch.cuda.empty_cache` under a
        comparison that NRN103 widens (`clear = torch.cuda.empty_cache if device == "cuda" else
        None`) becomes `torch.neuron.empty_cache if <Neuron> else torch.cuda.empty_cache`, in
        one edit group with the widening. On
        the accelerator target the `torch.accelerator` function is called where there is an
        accelerator (a statement under `if torch.accelerator.is_available():`, a value as
        `... if torch.accelerator.is_available() else <the CUDA call>`).

    Example:
        torch.cuda.reset_peak_memory_stats()
        torch.cuda.empty_cache()

    Use instead:
        if hasattr(torch, "accelerator") and torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "neuron":
            import torch_neuronx
            torch_neuronx.reset_peak_memory_stats()
        else:
            torch.cuda.reset_peak_memory_stats()
        if hasattr(torch, "accelerator") and torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "neuron":
            torch.neuron.empty_cache()
        else:
            torch.cuda.empty_cache()

    Fix safety:
        Unsafe: the statistics functions are documented in the memory-profiling guide but their
        location in `torch_neuronx` and `torch.neuron.empty_cache` come from a pre-release source
        drop; the keys of `memory_stats()` may differ from CUDA's.

    Evidence:
        DOC + SRC: the memory-profiling guide and the `torch_neuronx` import list; 3P: Hugging Face
        Accelerate's `clear_device_cache` calls `torch.neuron.empty_cache()`. No source found for the
        rest (reported).
    """

    id = "NRN113"
    targets = per_target.ALL
    name = "cuda-memory-api"
    safety = Safety.UNSAFE
    evidence = Evidence.SRC
    section = "device"
    references = ("https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/guides/memory-profiling-guide.html",)
    tokens = (b"cuda",)
    FUNCTIONS = frozenset(MAPPED) | frozenset(UNMAPPED)
    examples = (
        Example("import torch\nused = torch.cuda.memory_allocated(0)\n", None),
        Example("import torch\ntorch.cuda.empty_cache()\n",
                "import torch\nif hasattr(torch, \"accelerator\") and torch.accelerator.is_available() and "
                "torch.accelerator.current_accelerator().type == \"neuron\":\n    torch.neuron.empty_cache()\n"
                "else:\n    torch.cuda.empty_cache()\n"),
        Example(
            "import torch\ntry:\n    step()\nexcept torch.cuda.OutOfMemoryError:\n    shrink()\n",
            None,
        ),
    )

    def target_for(self, ref: CudaRef) -> str | None:
        return MAPPED.get(ref.fn)

    def on_ref(self, ref: CudaRef) -> None:
        if ref.fn in UNMAPPED:
            what = "`torch.cuda.OutOfMemoryError`" if ref.fn == "OutOfMemoryError" else spelled(ref)
            self.report(ref.outer, f"{what}: {UNMAPPED[ref.fn]}", evidence=Evidence.INF)
            return
        if per_target.target(self.ctx) != per_target.NEURON:
            name = MAPPED[ref.fn].split(".")[-1]
            if per_target.target(self.ctx) == per_target.ACCELERATOR and name in ACCELERATOR_MEMORY:
                portable = f"torch.accelerator.{name}"
                shown = f"`{portable}()`" if ref.call is not None else f"`{portable}`"
                self.neutral_rewrite(ref, portable, f"{spelled(ref)} -> {shown}")
            else:
                self.report(ref.outer, f"{spelled(ref)}: the CPU has no caching-allocator statistics; keep "
                                       "this on the CUDA path or drop it")
            return
        target = MAPPED[ref.fn]
        shown = f"`{target}()`" if ref.call is not None else f"`{target}`"
        if target.startswith("torch_neuronx."):
            # qualified_expr asks for `import torch_neuronx` unless the file already has one
            note = "; synchronize first, the allocator is asynchronous"
            if ref.fn in ("memory_stats",):
                note += "; check the keys you read"
            self.guarded_rewrite(ref, target, f"{spelled(ref)} -> {shown}{note}")
            return
        self.guarded_rewrite(ref, target, f"{spelled(ref)} -> {shown}")
