"""A file that does not parse: CPython's own message and position, one line, with a hint when
the file looks like Python 2; through the command line, in every output format."""

from __future__ import annotations

import json

import pytest

from helpers import neuronize
from neuronize.analysis.syntax_error import python_syntax_error

PY2 = [
    (b"import torch\nprint 'cuda'\nx = y.cuda()\n", 2, 1, "Missing parentheses in call to 'print'",
     "a print statement"),
    (b"import torch\ntry:\n    x = y.cuda()\nexcept ValueError, e:\n    pass\n", 4, 8,
     "multiple exception types must be parenthesized", "`except X, e:`"),
    (b"import torch\nx = `y`.cuda()\n", 2, 5, "invalid syntax", "backticks"),
    (b"import torch\nx = 10L\ny.cuda()\n", 2, 6, "invalid decimal literal", "a long literal"),
    (b"import torch\nif a <> b:\n    y.cuda()\n", 2, 6, "invalid syntax", "the `<>` operator"),
]


@pytest.mark.parametrize(("source", "line", "column", "message", "why"), PY2,
                         ids=["print", "except-comma", "backticks", "long", "diamond"])
def test_python_2_is_named_with_cpythons_message_and_position(tmp_path, source, line, column,
                                                               message, why):
    (tmp_path / "old.py").write_bytes(source)
    for command in ("check", "fix"):
        proc = neuronize(command, "old.py", cwd=tmp_path)
        assert proc.returncode == 2
        [error] = [x for x in proc.stderr.decode().splitlines() if x.startswith("error:")]
        assert error.startswith(f"error: old.py:{line}:{column}: syntax error: {message}"), error
        assert f"this looks like Python 2: {why}" in error
    assert (tmp_path / "old.py").read_bytes() == source


def test_a_python_3_syntax_error_has_no_python_2_hint(tmp_path):
    (tmp_path / "bad.py").write_bytes(b"import torch\nx = torch.zeros(2, .cuda()\n")
    proc = neuronize("check", "--output-format", "json", "bad.py", cwd=tmp_path)
    [error] = json.loads(proc.stdout)["errors"]
    assert error == {"path": "bad.py", "message": "syntax error: invalid syntax", "line": 2, "column": 20}
    proc = neuronize("check", "bad.py", cwd=tmp_path)
    assert "error: bad.py:2:20: syntax error: invalid syntax\n" in proc.stderr.decode()


def test_nothing_is_run_and_good_code_has_no_error():
    assert python_syntax_error(b"raise SystemExit('ran')\nimport os\nos._exit(3)\n") is None
    error = python_syntax_error(b"import sys; sys.exit(4)\ndef f(:\n")
    assert error is not None and (error.line, error.column) == (2, 7)


def test_a_file_python_refuses_offers_no_fix_it_would_not_make(tmp_path):
    """libcst reads `except X, e:`, CPython does not, and `fix` leaves the file alone: `check`
    lists its `.cuda()` as not applied, and counts nothing as fixable."""
    (tmp_path / "old.py").write_bytes(PY2[1][0])
    proc = neuronize("check", "--output-format", "json", "old.py", cwd=tmp_path)
    [finding] = json.loads(proc.stdout)["findings"]
    assert proc.returncode == 2 and finding["rule"] == "NRN102" and finding["fixable"] is False
    assert "not applied: the file is not rewritten while Python cannot compile it" in finding["message"]
