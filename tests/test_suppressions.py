"""Inline ``# neuronize: ignore`` comments: parsing them, and what they hide."""

from __future__ import annotations

import pytest

from neuronize.suppressions import Suppression, filter_findings, parse_suppressions
from neuronize.transform import Finding, Safety


def finding(line: int, rule: str = "NRN101", name: str = "cuda-device-string",
            end_line: int = 0) -> Finding:
    return Finding(line=line, column=1, rule=rule, name=name, safety=Safety.SAFE,
                   message="m", fixable=True, end_line=end_line)


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
    call = finding(5, "NRN102", "cuda-method", end_line=8)
    inner = finding(6, "NRN101", "cuda-device-string", end_line=6)
    kept, unused = filter_findings([call, inner], suppressions)
    assert kept == [inner] and unused == []


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


# -- filter_findings -------------------------------------------------------------------------------

def test_filter_by_id_any_case_and_by_name() -> None:
    findings = [finding(1), finding(2), finding(3), finding(4, "NRN102", "cuda-method")]
    source = (b"a  # neuronize: ignore[nrn101]\n"
              b"b  # neuronize: ignore[cuda-device-string]\n"
              b"c  # neuronize: ignore[NRN102]\n"
              b"d  # neuronize: ignore[NRN1]\n")
    kept, unused = filter_findings(findings, parse_suppressions(source))
    assert kept == [finding(3), finding(4, "NRN102", "cuda-method")]
    assert [s.line for s in unused] == [3, 4]  # wrong rule; prefixes are not accepted inline


def test_bare_suppression_hides_every_rule_on_its_lines() -> None:
    findings = [finding(2), finding(2, "NRN102", "cuda-method"), finding(3)]
    kept, unused = filter_findings(findings, parse_suppressions(b"x\ny  # neuronize: ignore\nz\n"))
    assert kept == [finding(3)] and unused == []


def test_suppression_on_last_line_of_a_multiline_finding() -> None:
    suppression = one(b"a(\n  1,\n)  # neuronize: ignore[NRN101]\n")
    kept, _ = filter_findings([finding(1, end_line=3), finding(4)], [suppression])
    assert kept == [finding(4)]


def test_end_line_zero_means_the_start_line_only() -> None:
    suppression = Suppression(line=2, codes=None, applies_to=frozenset({2}))
    kept, unused = filter_findings([finding(1, end_line=0)], [suppression])
    assert kept == [finding(1)] and unused == [suppression]


def test_redundant_suppressions_are_all_used() -> None:
    source = b"# neuronize: ignore[NRN101]\nx = 'cuda'  # neuronize: ignore\n"
    kept, unused = filter_findings([finding(2)], parse_suppressions(source))
    assert kept == [] and unused == []


def test_nothing_to_filter() -> None:
    findings = [finding(1)]
    assert filter_findings(findings, []) == (findings, [])
