"""The project's own top-level packages, from the files a run looks at: `import mamba_ssm` in the
mamba repository's tests is the project importing itself, not a dependency on a CUDA-only library."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import PurePosixPath


def top_level_packages(paths: Iterable[str]) -> tuple[str, ...]:
    """Sorted names of the directories holding an ``__init__.py`` whose parent holds none
    (``mamba_ssm/__init__.py`` -> ``mamba_ssm``; ``src/diffusers/__init__.py`` -> ``diffusers``)."""
    packages = {PurePosixPath(p.replace("\\", "/")).parent for p in paths if p.replace("\\", "/").endswith("__init__.py")}
    return tuple(sorted({d.name for d in packages if d.name and d.parent not in packages}))
