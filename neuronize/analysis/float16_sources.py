"""Where a project makes float16 tensors other than by an argument-less ``.half()``: a fact about the
run, found before any file is analysed.

``model.half()`` turned into bf16 on Neuron is whole only where every tensor that meets the model
follows. ``images.half()`` in a demo meets a model that another module loads with
``from_pretrained(..., torch_dtype=torch.float16)``; cast to bf16 alone, the images reach a float16
convolution and the dtypes clash. So a file's ``.half()`` stays float16 while any file of the
project still makes float16 (NRN205). Files that export or convert are not counted: their float16
is an output format, and it meets no tensor of the program.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path, PurePath

#: words naming code whose output format is the point (file and function names)
FORMAT_WORDS = ("export", "convert", "onnx")
#: float16 produced other than by an argument-less `.half()` (which NRN205 converts as a whole)
_FLOAT16 = re.compile(r"(?<![bB])float16|torch\.half\b(?!\()|fp16|HalfTensor|\.half\([^)]")
#: the cast NRN205 writes (bf16 on Neuron, float16 elsewhere): no float16 made elsewhere
_HOST_AWARE_CAST = re.compile(r"bfloat16 if [^\n]*? else [\w.]*float16")


def makes_float16(source: str) -> bool:
    """Whether ``source`` makes float16 other than by an argument-less ``.half()`` (``torch.float16``,
    ``torch.half``, ``fp16`` settings, ``.half(...)`` with arguments)."""
    return _FLOAT16.search(_HOST_AWARE_CAST.sub("", source)) is not None


def is_format_file(path: str | PurePath) -> bool:
    """Whether the file's name says it exports or converts (its float16 is an output format)."""
    name = PurePath(str(path).replace("\\", "/")).name.lower()
    return any(word in name for word in FORMAT_WORDS)


def float16_sources(files: Iterable[tuple[Path, PurePath, bytes]]) -> dict[Path, str]:
    """The files of ``files`` (path, path relative to the common folder, bytes) that make float16,
    each with its relative path as shown to the user; exporters and converters excepted."""
    return {path: relative.as_posix() for path, relative, source in files
            if not is_format_file(relative) and makes_float16(source.decode("utf-8", "replace"))}
