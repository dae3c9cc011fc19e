"""Inline ``# neuronize: ignore`` comments: parsing them, and what they hide."""

from __future__ import annotations

import pytest

from neuronize.analysis.engine import run_source
from neuronize.registry import all_rules
from neuronize.decision.suppressions import Suppression, parse_suppressions
from neuronize.types import Options


def one(source: bytes) -> Suppression:
    found = parse_suppressions(source)
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize(
    ("comment", "codes"),
    [
        ("# neuronize: ignore", None),
        ("#neuronize:ignore", None),
        ("# neuronize:   ignore  ", None),
        ("# neuronize: ignore  -- reviewed by ops", None),
        ("# neuronize: ignore[NRN101]", {"NRN101"}),
        ("# neuronize: ignore [ NRN101 ]", {"NRN101"}),
        ("# neuronize: ignore[NRN101, cuda-method]", {"NRN101", "cuda-method"}),
        ("# neuronize: ignore[NRN101,cuda-method]  reason: the CPU path", {"NRN101", "cuda-method"}),
        ("# neuronize: ignore[nrn101 NRN102]", {"nrn101", "NRN102"}),
        ("# noqa: E501  # neuronize: ignore[NRN102]", {"NRN102"}),
        ("# type: ignore[attr-defined]  # neuronize: ignore", None),
        ("# neuronize: ignore[NRN101]  # neuronize: ignore[NRN102]", {"NRN101", "NRN102"}),
    ],
)
def test_syntax(comment: str, codes: set[str] | None) -> None:
    suppression = one(f"x = y.cuda()  {comment}\n".encode())
    assert suppression.line == 1
    assert suppression.codes == (None if codes is None else frozenset(codes))
    assert suppression.applies_to == frozenset({1})


@pytest.mark.parametrize(
    "comment",
    [
        "# neuronize: ignored",
        "# neuronize: ignore-all",
        "# neuronize: ignore[NRN101",  # unclosed: not "ignore everything"
        "# neuronize: ignore[]",
        "# neuronize: ignore[ , ]",
        "# the docs say neuronize: ignore works",  # not a directive: no '#' right before it
        "# neuronize: skip",
        "# Neuronize: ignore",
    ],
)
def test_not_a_suppression(comment: str) -> None:
    assert parse_suppressions(f"x = 1  {comment}\n".encode()) == []


def test_cheap_exit_without_marker() -> None:
    assert parse_suppressions(b"x = y.cuda()  # noqa\n") == []


def test_standalone_comment_covers_the_next_line() -> None:
    source = b"if a:\n    # neuronize: ignore[NRN102]\n    x = y.cuda()\n"
    suppression = one(source)
    assert (suppression.line, suppression.applies_to) == (2, frozenset({2, 3}))


def test_comment_above_a_multiline_call() -> None:
    source = (b"model = (\n    1\n)\n"
              b"# neuronize: ignore[cuda-method]\n"
              b"out = model.to(\n    'cuda',\n    non_blocking=True,\n)\n")
    suppressions = parse_suppressions(source)
    assert [s.applies_to for s in suppressions] == [frozenset({4, 5})]
    # the call it names starts on a line it covers; another rule's finding further down is kept
    code = b"import torch\n# neuronize: ignore[cuda-method]\nout = model.cuda(\n    non_blocking=True,\n).to('cuda')\n"
    assert _kept(code) == ["5:NRN101"]


def test_comment_inside_brackets_on_its_own_line() -> None:
    source = b"f(\n    a,\n    # neuronize: ignore\n    b.cuda(),\n)\n"
    assert one(source).applies_to == frozenset({3, 4})


def test_comment_after_multiline_string_is_not_alone() -> None:
    source = b'x = """\nabc\n"""  # neuronize: ignore\ny = 1\n'
    assert one(source).applies_to == frozenset({3})


def test_comments_inside_strings_do_not_count() -> None:
    source = (b'doc = "# neuronize: ignore"\n'
              b"text = '''\n# neuronize: ignore[NRN101]\n'''\n"
              b"f = f\"{x} # neuronize: ignore\"\n")
    assert parse_suppressions(source) == []


def test_crlf() -> None:
    source = b"a = 1\r\n# neuronize: ignore[NRN101]\r\nb = x.cuda()  # neuronize: ignore\r\n"
    assert [(s.line, s.codes, s.applies_to) for s in parse_suppressions(source)] == [
        (2, frozenset({"NRN101"}), frozenset({2, 3})),
        (3, None, frozenset({3})),
    ]


def test_bom() -> None:
    source = b"\xef\xbb\xbf# neuronize: ignore\nx = y.cuda()\n"
    assert one(source).applies_to == frozenset({1, 2})


def test_latin1_cookie() -> None:
    source = ("# -*- coding: latin-1 -*-\n"
              "s = 'caf\xe9'  # d\xe9j\xe0 vu  # neuronize: ignore[NRN102]\n").encode("latin-1")
    assert one(source).codes == frozenset({"NRN102"})


def test_undecodable_source_gives_nothing_rather_than_raising() -> None:
    assert parse_suppressions(b"x = '\xff\xfe'  # neuronize: ignore\n") == []
    assert parse_suppressions(b"# -*- coding: klingon -*-\n# neuronize: ignore\n") == []


def test_untokenizable_tail_keeps_what_came_before() -> None:
    unclosed = b"x = 1  # neuronize: ignore\ny = (\n# neuronize: ignore\n"
    assert [s.line for s in parse_suppressions(unclosed)][:1] == [1]
    bad_indent = b"  x = 1  # neuronize: ignore\n\tdef (\n"
    assert [s.line for s in parse_suppressions(bad_indent)] == [1]
    assert parse_suppressions(b"x = 1\0  # neuronize: ignore\n") in ([], [one(b"x  # neuronize: ignore\n")])


# -- what suppressions hide, through the engine --------------------------------------------------

def _kept(source: bytes, unused: bool = False) -> list[str]:
    """``line:rule`` of each finding every rule keeps on ``source``."""
    result = run_source(source, all_rules(), Options(report_unused_suppressions=unused), fix=False)
    return [f"{f.line}:{f.rule}" for f in result.findings]


def test_filter_by_id_any_case_and_by_name() -> None:
    source = (b"import torch\n"
              b"a = m.cuda()  # neuronize: ignore[nrn102]\n"
              b"b = m.cuda()  # neuronize: ignore[cuda-method]\n"
              b"c = m.cuda()  # neuronize: ignore[NRN101]\n"
              b"d = m.cuda()  # neuronize: ignore[NRN1]\n")
    # the wrong rule silences nothing and is unused; prefixes are not accepted inline
    assert sorted(_kept(source, unused=True)) == ["4:NRN000", "4:NRN102", "5:NRN000", "5:NRN102"]


def test_bare_suppression_hides_every_rule_on_its_lines() -> None:
    source = (b"import torch\nx = torch.zeros(1, device='cuda').cuda()  # neuronize: ignore\n"
              b"y = torch.zeros(1, device='cuda').cuda()\n")
    assert sorted(_kept(source)) == ["3:NRN101", "3:NRN102"]


def test_suppression_on_last_line_of_a_multiline_finding() -> None:
    source = b"import torch\ny = m.cuda(\n    0,\n)  # neuronize: ignore[NRN102]\nz = m.cuda(\n    0,\n)\n"
    assert _kept(source) == ["5:NRN102"]


def test_redundant_suppressions_are_all_used() -> None:
    source = b"import torch\n# neuronize: ignore[NRN102]\nx = m.cuda()  # neuronize: ignore\n"
    assert _kept(source, unused=True) == []


# -- ruff's spelling, and typos --------------------------------------------------------------------

@pytest.mark.parametrize(
    ("comment", "codes"),
    [
        ("# noqa: NRN102", {"NRN102"}),
        ("# noqa:NRN102,E501", {"NRN102"}),
        ("# NOQA: nrn102 NRN101", {"NRN102", "NRN101"}),
        ("# type: ignore  # noqa: F401, NRN903", {"NRN903"}),
    ],
)
def test_noqa_names_our_codes_on_its_own_line(comment: str, codes: set[str]) -> None:
    suppression = one(f"x = y.cuda()  {comment}\n".encode())
    assert suppression.codes == frozenset(codes)
    assert suppression.applies_to == frozenset({1})
    alone = one(f"{comment}\nx = y.cuda()\n".encode())
    assert alone.applies_to == frozenset({1})  # flake8 and ruff: never the next line


@pytest.mark.parametrize("comment", ["# noqa", "# noqa: E501", "# noqa:F401,W291", "# noqa NRN102"])
def test_noqa_without_our_codes_is_not_ours(comment: str) -> None:
    """A bare `# noqa` quiets another linter; it must not hide CUDA code from the migration."""
    assert parse_suppressions(f"x = y.cuda()  {comment}\n".encode()) == []


def _check(tmp_path, source: bytes):  # type: ignore[no-untyped-def]
    from helpers import neuronize

    (tmp_path / "m.py").write_bytes(source)
    return neuronize("check", "m.py", cwd=tmp_path)


def test_noqa_silences_a_finding_like_neuronize_ignore(tmp_path) -> None:
    proc = _check(tmp_path, b"import torch\na = m.cuda()  # noqa: NRN102\nb = m.cuda()  # noqa\n"
                            b"c = m.cuda()  # neuronize: ignore[NRN102]\n")
    lines = proc.stdout.decode().splitlines()
    assert [line.split()[0] for line in lines] == ["m.py:3:5"]


def test_a_misspelt_rule_in_a_suppression_is_reported(tmp_path) -> None:
    proc = _check(tmp_path, b"import torch\na = m.cuda()  # neuronize: ignore[NRN1O2]\n"
                            b"b = m.cuda()  # neuronize: ignore[cuda-methd, NRN102]\n"
                            b"c = m.cuda()  # noqa: NRN1020\n")
    assert proc.returncode == 1
    out = proc.stdout.decode()
    assert ("m.py:2:15 NRN000 [report-only] unknown rule `NRN1O2` in a suppression: it silences "
            "nothing (did you mean NRN102?)") in out
    assert "m.py:2:5 NRN102" in out  # the typo silenced nothing
    assert "unknown rule `cuda-methd` in a suppression: it silences nothing (did you mean cuda-method?)" in out
    assert "m.py:3:5 NRN102" not in out  # NRN102 is also named there
    assert "m.py:4:15 NRN000 [report-only] unknown rule `NRN1020`" in out
