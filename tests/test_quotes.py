"""New strings follow the quote style around them (neuronize/writing/quotes.py)."""

from __future__ import annotations

import libcst as cst
import pytest

from neuronize.writing.quotes import file_quote, requote


@pytest.mark.parametrize(("source", "style"), [
    (b"a = 'x'\nb = 'y'\nc = \"z\"\n", "'"),
    (b"a = 'x'\nb = \"y\"\n", '"'),  # a tie: double quotes
    (b'"""Docstring."""\n' + b"a = 'x'  # don't count this\n", "'"),
    (b"# it's a comment, isn't it\nb = \"y\"\n", '"'),
    (b"", '"'),
])
def test_file_quote(source: bytes, style: str) -> None:
    assert file_quote(source) == style


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


def test_new_strings_follow_the_replaced_code_then_the_file() -> None:
    original = cst.parse_expression("torch.device('cuda')")
    replacement = cst.parse_expression('torch.device(x if ok else "cpu")')
    assert _code(requote(original, replacement, '"')) == "torch.device(x if ok else 'cpu')"
    method = cst.parse_expression("net.cuda()")
    to = cst.parse_expression('net.to("neuron")')
    assert _code(requote(method, to, "'")) == "net.to('neuron')"
    assert requote(method, to, '"') is to


@pytest.mark.parametrize("literal", ['"it\'s"', 'f"{x}"', 'b"x"', '"a\\n"', '"""x"""'])
def test_only_plain_literals_are_requoted(literal: str) -> None:
    replacement = cst.parse_expression(f"f({literal})")
    assert _code(requote(cst.parse_expression("g()"), replacement, "'")) == f"f({literal})"
