"""Literals: strings and their quote style, CUDA device strings, ``True`` / ``False`` / ``None``."""

from __future__ import annotations

import ast
import enum
import functools
import re

import libcst as cst

from neuronize.analysis.syntax import dotted_name, is_false_or_none
from neuronize.analysis.walk import iter_syntax

CUDA_INDEXED = re.compile(r"^cuda:(\d+)$")
# Strings that name a device type; a conditional expression choosing between them picks a device.
DEVICE_WORD = re.compile(r"^(cuda|cpu|mps|xpu|neuron|meta|hpu|npu|xla|mtia)(:\d+)?$")


# -- strings -------------------------------------------------------------------------------
@functools.lru_cache(maxsize=4096)
def _evaluated(literal: str) -> object:
    """The value of a string literal's code: libcst's ``evaluated_value`` compiles the literal at
    every call, and the rules ask the same few strings (``"cuda"``...) again and again."""
    return ast.literal_eval(literal)


def string_value(node: cst.CSTNode) -> str | None:
    """The value of a plain (non-f, non-bytes) string literal, else None."""
    if isinstance(node, cst.SimpleString):
        prefix = node.prefix.lower()
        if "b" in prefix or "f" in prefix:
            return None
        value = _evaluated(node.value)
        return value if isinstance(value, str) else None
    if isinstance(node, cst.ConcatenatedString):
        left, right = string_value(node.left), string_value(node.right)
        return None if left is None or right is None else left + right
    return None


def string_template(node: cst.CSTNode) -> str | None:
    """The text of a string built from literals and values (``"self_" + device + "_time_total"``,
    ``f"{device}_time_total"``), each value written ``{}``; None where ``node`` builds no string."""
    if isinstance(node, cst.FormattedString):
        return "".join(p.value if isinstance(p, cst.FormattedStringText) else "{}" for p in node.parts)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
        parts = [value if (value := string_value(side)) is not None else string_template(side)
                 for side in (node.left, node.right)]
        if all(part is None for part in parts):
            return None
        return "".join("{}" if part is None else part for part in parts)
    return None


def string_values(node: cst.BaseExpression) -> list[str] | None:
    """The strings of a literal string, or of a list/tuple/set of literal strings, else None."""
    single = string_value(node)
    if single is not None:
        return [single]
    if isinstance(node, (cst.List, cst.Tuple, cst.Set)):
        values = [string_value(el.value) for el in node.elements]
        if all(v is not None for v in values):
            return [v for v in values if v is not None]
    return None


def is_string_literal(node: cst.CSTNode) -> bool:
    """Any string literal: plain, concatenated or an f-string."""
    return isinstance(node, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString))


def make_string(value: str, like: cst.CSTNode | None = None) -> cst.SimpleString:
    """A string literal for ``value`` in the quote style of ``like`` (double quotes by default)."""
    quote = '"'
    if isinstance(like, cst.SimpleString):
        quote = like.quote if like.quote in ("'", '"') else '"'
    if quote in value:
        quote = '"' if quote == "'" else "'"
    return cst.SimpleString(f"{quote}{value}{quote}")



def quote_source(node: cst.CSTNode) -> cst.SimpleString | None:
    """A string literal whose quote style a replacement of ``node`` should follow."""
    if isinstance(node, cst.SimpleString):
        return node
    if isinstance(node, cst.FormattedString):
        quote = node.start.lstrip("fFrRbB")
        return cst.SimpleString(f"{quote}x{quote}") if quote in ("'", '"') else None
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        return quote_source(node.func.value)
    if isinstance(node, cst.BinaryOperation):
        return quote_source(node.left)
    if isinstance(node, cst.ConcatenatedString):
        return quote_source(node.left)
    return None


def string_like(node: cst.CSTNode, value: str) -> cst.SimpleString:
    """``value`` as a string literal replacing ``node``: its quote style, its parentheses kept."""
    new = make_string(value, quote_source(node))
    return new.with_changes(lpar=getattr(node, "lpar", ()), rpar=getattr(node, "rpar", ()))


# -- True / False / None -------------------------------------------------------------------
def is_true(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"


def is_false(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "False"


def switches_off(node: cst.BaseExpression) -> bool:
    """``False``, ``None`` or ``0``: a keyword that switches a feature off."""
    return is_false_or_none(node) or (isinstance(node, cst.Integer) and node.value == "0")


# -- CUDA device strings -------------------------------------------------------------------
class Kind(enum.Enum):
    """How a CUDA device literal names its device."""

    PLAIN = "plain"  # "cuda", "cuda:0": dropping nothing
    INDEXED = "indexed"  # "cuda:1": a non-zero literal index is dropped
    DYNAMIC = "dynamic"  # f"cuda:{rank}", "cuda:{}".format(i)...: a computed index is dropped

    @property
    def drops_index(self) -> bool:
        return self is not Kind.PLAIN


#: the qualified name of a legacy CUDA tensor type (``torch.cuda.FloatTensor``), its class the group
LEGACY_CUDA_TYPE = re.compile(r"^torch\.cuda\.(\w+Tensor)$")


def cuda_literal(node: cst.CSTNode) -> Kind | None:
    """The kind of CUDA device ``node`` spells, or None if it is no CUDA device literal."""
    value = string_value(node)
    if value is not None:
        if value == "cuda":
            return Kind.PLAIN
        m = CUDA_INDEXED.match(value)
        if m:
            return Kind.PLAIN if int(m.group(1)) == 0 else Kind.INDEXED
        return None
    if isinstance(node, cst.FormattedString):
        parts = node.parts
        if parts and all(isinstance(p, cst.FormattedStringText) for p in parts):
            # f"cuda", f"cuda:0": an f-string without placeholders is a plain string
            text = "".join(p.value for p in parts)  # type: ignore[attr-defined]
            return cuda_literal(cst.SimpleString(repr(text))) if "\\" not in text else None
        if (len(parts) == 2 and isinstance(parts[0], cst.FormattedStringText)
                and parts[0].value == "cuda:" and isinstance(parts[1], cst.FormattedStringExpression)
                and parts[1].format_spec is None):
            return Kind.DYNAMIC
        return None
    if isinstance(node, cst.Call):
        # "cuda:{}".format(rank), "cuda:{0}".format(rank)
        func = node.func
        if (isinstance(func, cst.Attribute) and func.attr.value == "format"
                and string_value(func.value) in ("cuda:{}", "cuda:{0}") and len(node.args) == 1
                and node.args[0].keyword is None and not node.args[0].star):
            return Kind.DYNAMIC
        return None
    if isinstance(node, cst.BinaryOperation):
        left = string_value(node.left)
        if isinstance(node.operator, cst.Modulo) and left in ("cuda:%d", "cuda:%s", "cuda:%i"):
            return Kind.DYNAMIC
        if isinstance(node.operator, cst.Add) and left in ("cuda:", "cuda"):  # "cuda" + suffix: ":0" or ""
            return Kind.DYNAMIC
    return None


def gpu_word(text: str) -> bool:
    """``"gpu"`` (``"GPU"``, ``"gpu:0"``): a framework's device word for a CUDA GPU (composer's
    ``device="gpu"``, Lightning's ``accelerator="gpu"``). No rule gives Neuron a word of its own
    there, so a Neuron host handed it runs the framework's CUDA path (unless the code that tests
    the word is the file's own: ``cuda_guard._dispatches_on_gpu_word``)."""
    return text.split(":")[0].strip().lower() == "gpu"


def is_device_word(node: cst.CSTNode) -> bool:
    """A string naming a device type (``"cpu"``, ``"mps"``, ``"cuda:1"``...) or a CUDA device literal."""
    value = string_value(node)
    return (value is not None and bool(DEVICE_WORD.match(value))) or cuda_literal(node) is not None


def branches_mention_cuda(node: cst.IfExp) -> bool:
    """A CUDA device string anywhere in either branch of ``... if ... else ...``.

    Such a conditional chooses a device: the device-placement rules (NRN101) rewrite it as one
    unit, and the runtime rules (NRN110) leave its ``torch.cuda.is_available()`` test alone.
    """
    return any(cuda_literal(part) is not None for branch in (node.body, node.orelse) for part in iter_syntax(branch))


def cuda_member(value: cst.BaseExpression, qualified: str | None = None) -> bool:
    """``value`` is a member of a program's own device enum or class for CUDA (``Backend.CUDA``,
    ``Device.cuda``), not torch's: an attribute named for CUDA whose dotted name (``qualified``,
    as the file's imports resolve it, else as written) is outside ``torch``."""
    if not (isinstance(value, cst.Attribute) and value.attr.value.lower() == "cuda"):
        return False
    name = qualified if qualified is not None else dotted_name(value)
    return name is not None and name.split(".")[0] != "torch"
