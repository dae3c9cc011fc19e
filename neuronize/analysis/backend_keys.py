"""The names a project gives to its choice of backend: a fact about the run, found before any file is
analysed.

A serving engine that implements its work once per vendor picks the implementation by a name:
``assert device_type in ["cuda", "ascend", "maca", "camb"]``, ``--device`` with ``choices=["cuda",
"ascend"]``. Such a value is a key of the project's own backend table, not a torch device: the
table (``get_backend(device_type)``, a ``DEVICE_SPECIAL_MODULE_MAP``) has no entry for
``"neuron"``, so a default moved there fails wherever the key is looked up, however many
validation lists accept it. The key is recognised by a list of names beside ``"cuda"`` that are
not torch device types; every default of a setting, parameter or option of that name in the
project then stays (reported: Neuron needs a backend of its own first). Only files with a literal
list naming ``"cuda"`` and such a backend are parsed (with :mod:`ast`: read-only, and fast).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable

#: device types torch knows (built in, or registered by a backend as its PrivateUse1 name), and
#: the words code uses for "a GPU, whichever" or "let the library choose": none is a backend key
_DEVICE_WORDS = frozenset({
    "cpu", "cuda", "mps", "xpu", "xla", "meta", "hpu", "mtia", "ipu", "hip", "ve", "fpga", "maia", "lazy",
    "vulkan", "mkldnn", "opengl", "opencl", "ideep", "privateuseone", "npu", "mlu", "musa", "neuron", "sdaa",
    "gcu", "tpu", "gpu", "auto", "default", "none", "all", "any",
})
#: a literal list, tuple or set of quoted names, ``"cuda"`` among them (its names: :data:`_QUOTED`)
_LISTED = re.compile(rb"""[\[({]\s*(?:['"][\w:.\-]*['"]\s*,\s*)*['"]cuda['"]\s*(?:,\s*['"][\w:.\-]*['"]\s*)*,?\s*[\])}]""")
_QUOTED = re.compile(rb"""['"]([\w:.\-]*)['"]""")
_OPTION_CALLS = frozenset({"add_argument", "option"})


def backend_keys(sources: Iterable[bytes]) -> frozenset[str]:
    """The names (last part: ``device_type`` of ``self.device_type``; ``device`` of ``--device``)
    that ``sources`` check against a list naming ``"cuda"`` and a backend that is no torch device."""
    found: set[str] = set()
    for source in sources:
        if (b"'cuda'" not in source and b'"cuda"' not in source) or not any(
                names_backends(name.decode() for name in _QUOTED.findall(listed.group()))
                for listed in _LISTED.finditer(source)):
            continue  # parsed only where a list names a backend beside CUDA
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            continue  # the file's own analysis reports it
        for node in ast.walk(tree):
            name = _checked_name(node)
            if name is not None:
                found.add(name)
    return frozenset(found)


def _checked_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn)) \
            and _lists_backends(node.comparators[0]):
        return _last_name(node.left)
    if isinstance(node, ast.Call) and _last_name(node.func) in _OPTION_CALLS:
        choices = next((k.value for k in node.keywords if k.arg == "choices"), None)
        if choices is None or not _lists_backends(choices):
            return None
        dest = next((k.value.value for k in node.keywords if k.arg == "dest" and isinstance(k.value, ast.Constant)), None)
        flag = next((a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
                     and a.value.startswith("--")), None)
        named = dest if isinstance(dest, str) else flag.lstrip("-").replace("-", "_") if flag is not None else None
        return named or None
    return None


def names_backends(values: Iterable[str | None]) -> bool:
    """The entries of a literal list name ``"cuda"`` and a backend that is no torch device type
    (``["cuda", "ascend", "maca"]``): the project's own backends."""
    names = [v.lower() for v in values if v is not None]
    return "cuda" in names and any(n.split(":")[0] not in _DEVICE_WORDS for n in names)


def _lists_backends(node: ast.AST) -> bool:
    if not isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return False
    return names_backends(e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str))


def _last_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None
