"""Whether code checks which host it runs on, or is bound to CUDA hosts, judged from its bytes: a
fact about the files of a run and the cells of a notebook, found before any of them is parsed.

A program whose code asks ``torch.cuda.is_available()`` (or any other ``is_available()``), or
places a model with ``device_map="auto"``, runs on more than one kind of host. Its parts that
hard-code CUDA are then run on each of those hosts too: a library module by whichever script
calls it, a notebook cell after the cell that chose the device. Those parts gain Neuron host-aware (``"neuron" if <Neuron is here> else "cuda"``)
instead of moving to Neuron outright, which would break the CUDA box the choice still serves.

A program that imports a CUDA-only compute package at its top level, unguarded (Unsloth, xFormers,
FlashAttention...), runs on CUDA hosts only until that package is replaced by hand: its hard-coded
CUDA gains Neuron host-aware too, so the CUDA box keeps running it meanwhile (an outright move
broke it, and Neuron could not run it either).
"""

from __future__ import annotations

import functools
import re

from neuronize.analysis.cuda_packages import PACKAGES, Path

#: an availability check the code makes itself (not the accelerator test a migration writes: a
#: second run must find the choices the first one found, no more), also through a library's helper
#: for one kind of host (Accelerate's ``is_xpu_available()``, transformers'
#: ``is_torch_npu_available()``), or a model placed by Accelerate's ``device_map="auto"``, which
#: puts it on the GPUs where there are some, else on the CPU
ASKS_AVAILABLE = re.compile(rb"(?<!accelerator\.)is_available\(\)|\bis_(?:torch_)?(?:cuda|gpu|xpu|npu|hpu|mps|mlu|musa)"
                            rb"_available\b|device_map\s*=\s*['\"]auto['\"]")


#: a conditional expression that chooses between CUDA and the CPU by any test, a user's flag too
#: (``torch.device("cuda" if opt.cuda else "cpu")``, ``"cpu" if args.no_cuda else "cuda:0"``): the
#: program runs on both, as the user asks
CHOOSES_CPU_OR_CUDA = re.compile(
    rb"""['"](?:cuda(?::\d+)?|cpu)['"]\s*\)?\s*if\s[^\n]*?\selse\s+(?:\w+\.device\(\s*)?['"](?:cuda|cpu)\b""")
#: a list of the devices the program accepts, the CPU and CUDA (``choices=["cpu", "cuda"]``,
#: ``_VALID_DEVICES = ['cpu', 'cuda']``): the user chooses the host
OFFERS_CPU_OR_CUDA = re.compile(rb"""[\[(]\s*['"](?:cpu|cuda)['"]\s*,\s*['"](?:cpu|cuda)['"]""")


def checks_host(source: bytes) -> bool:
    """``source`` asks whether a host is available, or lets Accelerate choose (see
    :data:`ASKS_AVAILABLE`), or chooses between CUDA and the CPU (:data:`CHOOSES_CPU_OR_CUDA`), or
    lets its user choose between them (:data:`OFFERS_CPU_OR_CUDA`)."""
    return ((b"available" in source or b"device_map" in source) and ASKS_AVAILABLE.search(source) is not None
            or b"else" in source and any(_crosses(m.group()) for m in CHOOSES_CPU_OR_CUDA.finditer(source))
            or b"cpu" in source and any(_crosses(m.group()) for m in OFFERS_CPU_OR_CUDA.finditer(source)))


def _crosses(choice: bytes) -> bool:
    """One arm of ``choice`` names CUDA and the other the CPU."""
    return set(_QUOTED_DEVICE.findall(choice)) == {b"cuda", b"cpu"}


_QUOTED_DEVICE = re.compile(rb"""['"](cuda|cpu)\b""")


@functools.cache
def _cuda_import() -> re.Pattern[bytes]:
    """An unindented (so unguarded, top-level) import of a package whose code runs on CUDA only and
    has a replacement to port to (monitoring tools bind no device)."""
    names = sorted(name for name, package in PACKAGES.items() if package.cuda_only and package.path is not Path.NONE)
    alternatives = b"|".join(re.escape(name.encode()) for name in names)
    return re.compile(rb"^(?:import|from)[ \t]+(?:%s)\b" % alternatives, re.MULTILINE)


def needs_cuda_package(source: bytes) -> bool:
    """``source`` imports a CUDA-only compute package at its top level, unguarded (see the module)."""
    return b"import" in source and _cuda_import().search(source) is not None


def serves_cuda_hosts(source: bytes) -> bool:
    """``source`` keeps CUDA hosts among the hosts it runs on: it checks for a host, or it needs a
    CUDA-only package (see the module); code it runs, or that runs after it, serves them too."""
    return checks_host(source) or needs_cuda_package(source)
