"""What to do about a CUDA, NCCL or CUDA-allocator environment variable on Neuron: one reading for
the rule that finds them in Python (NRN911) and for the notebook lines that set them."""

from __future__ import annotations

from neuronize.types import Evidence

NO_MEANING = "a CUDA setting with no Neuron meaning; drop it"
#: `CUDA_VISIBLE_DEVICES` values that hide every GPU: the program asks for the CPU
HIDE_ALL = ("", "-1")
CPU_ONLY = ("hides every GPU to run on the CPU; this hides no NeuronCore, and the Neuron runtime documents no "
            "way to hide them all: make the program's device choice explicit (`device=\"cpu\"`)")


def advice_for(key: str) -> tuple[str, Evidence] | None:
    """What to do about an environment variable, and how sure the reference is; None: not ours."""
    if key == "CUDA_VISIBLE_DEVICES":
        return ("use `NEURON_RT_VISIBLE_CORES` (e.g. `0-3`; under torchrun with the `\"neuron\"` "
                "process group each rank gets its own core automatically)", Evidence.DOC)
    if key == "NVIDIA_VISIBLE_DEVICES":
        return "container GPU selection; use `NEURON_RT_VISIBLE_CORES` for NeuronCores", Evidence.DOC
    if key == "CUDA_LAUNCH_BLOCKING":
        return ("has no effect on Neuron; `NEURON_LAUNCH_BLOCKING=1` is the candidate synchronous-mode "
                "analogue", Evidence.INF)
    if key in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"):
        return "no Neuron allocator setting is documented; drop it", Evidence.INF
    if key.startswith(("NCCL_", "TORCH_NCCL_")):
        return ("the `\"neuron\"` process group documents no NCCL mapping; drop it (multi-node needs "
                "EFA on every node)", Evidence.DOC)
    if key in ("TORCH_CUDA_ARCH_LIST", "CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"):
        return "only used to build CUDA code; there is no CUDA toolkit on Trainium", Evidence.INF
    if key == "CUBLAS_WORKSPACE_CONFIG":
        return ("cuBLAS determinism setting with no Neuron meaning; `torch.use_deterministic_algorithms` "
                "alone is honoured", Evidence.INF)
    if key.startswith("CUDA_") or key in ("TORCH_USE_CUDA_DSA", "PYTORCH_NVML_BASED_CUDA_CHECK"):
        return NO_MEANING, Evidence.INF
    return None
