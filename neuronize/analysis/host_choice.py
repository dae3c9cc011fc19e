"""Whether code checks which host it runs on, judged from its bytes: a fact about the files of a
run, found before any of them is parsed.

A program whose code asks ``torch.cuda.is_available()`` (or any other ``is_available()``), or
places a model with ``device_map="auto"``, or chooses between CUDA and the CPU, runs on more than
one kind of host: a checkpoint its library modules load may come from either.
"""

from __future__ import annotations

import re


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
