"""A report-only finding repeated in many places is one line with a count; JSON keeps them all."""

from __future__ import annotations

import json

from neuronize.presenting.repeats import collapse, more, repeat_key
from neuronize.types import Finding, Safety
from tests.helpers import neuronize

GUARDED = b"try:\n    from flash_attn import flash_attn_func\nexcept ImportError:\n    flash_attn_func = None\n"


def test_text_output_says_a_repeated_finding_once_and_json_keeps_every_location(tmp_path):
    for name in ("a.py", "b.py", "c.py"):
        (tmp_path / name).write_bytes(GUARDED)
    (tmp_path / "d.py").write_bytes(b"import flash_attn\n")  # a HARD import says something else
    text = neuronize("check", ".", cwd=tmp_path).stdout.decode().splitlines()
    assert len(text) == 2
    assert text[0].startswith("a.py:2:5 NRN903") and text[0].endswith("(and 2 more like it: b.py:2:5, c.py:2:5)")
    assert text[1].startswith("d.py:1:1 NRN903")
    report = json.loads(neuronize("check", "--output-format", "json", ".", cwd=tmp_path).stdout)
    assert len(report["findings"]) == 4


def _finding(line: int, message: str, fixable: bool = False) -> Finding:
    return Finding(line, 1, "NRN903", "cuda-only-library", Safety.REPORT_ONLY, message, fixable)


def test_fixes_never_collapse_and_places_are_named_up_to_a_limit():
    fix = _finding(1, "`x` -> `y`", fixable=True)
    assert repeat_key(fix) is None
    items = [("f", _finding(i, f"`import m{i}` needs CUDA")) for i in range(1, 6)] + [("f", fix), ("f", fix)]
    grouped = collapse(items)
    assert [(len(repeats)) for _, _, repeats in grouped] == [4, 0, 0]
    assert more(["a", "b", "c", "d"]) == " (and 4 more like it: a, b, c, ...)"
    assert more(["a", "b"], limit=None) == " (and 2 more like it: a, b)"


def test_show_repeats_gives_every_place_a_line_of_its_own(tmp_path):
    for name in ("a.py", "b.py", "c.py"):
        (tmp_path / name).write_bytes(GUARDED)
    for command in (("check",), ("fix", "--diff")):
        result = neuronize(*command, "--show-repeats", "--output-format", "concise", ".", cwd=tmp_path)
        # `fix --diff` prints the findings on stderr (stdout carries the diff)
        lines = [line for line in (result.stdout + result.stderr).decode().splitlines() if " NRN903 " in line]
        assert [line.split(" ")[0] for line in lines] == ["a.py:2:5", "b.py:2:5", "c.py:2:5"]
        assert not any("more like it" in line for line in lines)
        assert result.returncode == 1
