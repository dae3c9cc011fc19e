"""The baseline ratchet: accepted findings stay accepted across edits; new ones are caught."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from neuronize import __version__
from neuronize.decision.baseline import (
    BaselineEntry,
    entries_for,
    fingerprint,
    load_baseline,
    new_findings,
    write_baseline,
)
from neuronize.transform import Finding, Safety


def finding(line: int, column: int = 1, rule: str = "NRN102") -> Finding:
    return Finding(line=line, column=column, rule=rule, name="cuda-method", safety=Safety.SAFE,
                   message="m", fixable=True)


def line_of(source: bytes, needle: bytes) -> int:
    return source.splitlines().index(next(l for l in source.splitlines() if needle in l)) + 1


BEFORE = b"import torch\n\nmodel = Net()\nmodel.cuda()\n"


def baseline_of(path: str, source: bytes, findings: list[Finding]) -> frozenset[BaselineEntry]:
    return frozenset(entries_for(path, source, findings))


def test_fingerprint_is_stable_and_whitespace_blind() -> None:
    a = fingerprint("NRN102", "    model.cuda()", 0)
    assert a == fingerprint("NRN102", "model.cuda()  ", 0)
    assert a == fingerprint("NRN102", "model.cuda()\r", 0)
    assert a != fingerprint("NRN102", "model.cuda()", 1)
    assert a != fingerprint("NRN101", "model.cuda()", 0)
    assert a != fingerprint("NRN102", "net.cuda()", 0)
    assert a == "06f3ba2a0ab99c63"  # pinned: the same on every run, machine and version
    assert fingerprint("NRN102", "model.cuda()", 0) == a


def test_lines_inserted_above_keep_the_finding_baselined() -> None:
    baseline = baseline_of("a.py", BEFORE, [finding(4)])
    after = b"import torch\nimport os\n\n\n# setup\nmodel = Net()\nmodel.cuda()\n"
    assert new_findings("a.py", after, [finding(line_of(after, b"cuda"))], baseline) == []


def test_reindenting_keeps_it_baselined() -> None:
    baseline = baseline_of("a.py", BEFORE, [finding(4)])
    after = b"import torch\n\nif True:\n    model = Net()\n    model.cuda()  \n"
    assert new_findings("a.py", after, [finding(5, 5)], baseline) == []


def test_a_second_identical_finding_is_new() -> None:
    baseline = baseline_of("a.py", BEFORE, [finding(4)])
    after = BEFORE + b"print('x')\nmodel.cuda()\n"
    findings = [finding(4), finding(6)]
    assert new_findings("a.py", after, findings, baseline) == [finding(6)]
    # the occurrence count follows source order, not the order findings arrive in
    assert new_findings("a.py", after, findings[::-1], baseline) == [finding(6)]


def test_two_identical_findings_on_one_line_are_two_occurrences() -> None:
    source = b"a.cuda(); a.cuda()\n"
    entries = entries_for("a.py", source, [finding(1, 11), finding(1, 1)])
    assert len(set(entries)) == 2
    assert new_findings("a.py", source, [finding(1, 1)], frozenset(entries[1:])) == []


def test_changing_the_line_makes_it_new() -> None:
    baseline = baseline_of("a.py", BEFORE, [finding(4)])
    after = BEFORE.replace(b"model.cuda()", b"model.cuda(0)")
    assert new_findings("a.py", after, [finding(4)], baseline) == [finding(4)]


def test_other_rule_or_other_file_is_new() -> None:
    baseline = baseline_of("a.py", BEFORE, [finding(4)])
    assert new_findings("a.py", BEFORE, [finding(4, rule="NRN101")], baseline) != []
    assert new_findings("b.py", BEFORE, [finding(4)], baseline) == [finding(4)]


@pytest.mark.parametrize("other", ["./a.py", "a.py", "sub/../a.py", "./sub/../a.py"])
def test_paths_normalise(other: str) -> None:
    baseline = baseline_of("./a.py", BEFORE, [finding(4)])
    assert new_findings(other, BEFORE, [finding(4)], baseline) == []


def test_windows_separators_normalise() -> None:
    baseline = baseline_of("pkg\\a.py", BEFORE, [finding(4)])
    assert {e.path for e in baseline} == {"pkg/a.py"}


def test_encodings_and_line_endings() -> None:
    utf8 = "x = 'café'\nmodel.cuda()  # é\n".encode()
    crlf = utf8.replace(b"\n", b"\r\n")
    bom = b"\xef\xbb\xbf" + utf8
    latin = ("# -*- coding: latin-1 -*-\nx = 'café'\nmodel.cuda()  # é\n").encode("latin-1")
    expected = entries_for("a.py", utf8, [finding(2)])
    assert entries_for("a.py", crlf, [finding(2)]) == expected
    assert entries_for("a.py", bom, [finding(2)]) == expected
    assert entries_for("a.py", latin, [finding(3)]) == expected
    # undecodable bytes and out-of-range lines do not raise
    assert len(entries_for("a.py", b"x = '\xff'\n", [finding(1), finding(99)])) == 2


def test_write_then_load_round_trip(tmp_path: Path) -> None:
    source_a = BEFORE + b"x.cuda()\n"
    entries = (entries_for("./pkg/a.py", source_a, [finding(4), finding(5)])
               + entries_for("b.py", BEFORE, [finding(4, rule="NRN101")]))
    file = tmp_path / "neuronize-baseline.json"
    write_baseline(file, entries + entries[:1])  # duplicates collapse
    data = json.loads(file.read_text())
    assert data["version"] == 1 and data["neuronize"] == __version__
    assert list(data["files"]) == ["b.py", "pkg/a.py"]
    assert load_baseline(file) == frozenset(entries)
    # stable: writing the same entries in another order gives the same bytes
    first = file.read_bytes()
    write_baseline(file, reversed(entries))
    assert file.read_bytes() == first
    assert first.endswith(b"}\n")


def test_empty_baseline(tmp_path: Path) -> None:
    file = tmp_path / "b.json"
    write_baseline(file, [])
    assert json.loads(file.read_text())["files"] == {}
    assert load_baseline(file) == frozenset()


def test_write_is_atomic_and_leaves_no_temp_files(tmp_path: Path) -> None:
    file = tmp_path / "b.json"
    write_baseline(file, [BaselineEntry("NRN101", "a.py", "0" * 16)])
    os.chmod(file, 0o640)
    write_baseline(file, [BaselineEntry("NRN102", "a.py", "1" * 16)])
    assert os.listdir(tmp_path) == ["b.json"]
    assert stat.S_IMODE(file.stat().st_mode) == 0o640
    assert load_baseline(file) == {BaselineEntry("NRN102", "a.py", "1" * 16)}


def test_new_file_is_not_owner_only(tmp_path: Path) -> None:
    file = tmp_path / "b.json"
    old = os.umask(0o022)
    try:
        write_baseline(file, [])
    finally:
        os.umask(old)
    assert stat.S_IMODE(file.stat().st_mode) == 0o644


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{not json", "baseline is not valid JSON: Expecting property name"),
        ("[]", "expected a JSON object"),
        ('{"version": 2, "files": {}}', "unsupported version 2"),
        ('{"files": {}}', "unsupported version None"),
        ('{"version": 1}', '"files" must be an object'),
        ('{"version": 1, "files": {"a.py": {}}}', "'a.py' must map to a list"),
        ('{"version": 1, "files": {"a.py": [{"rule": "NRN101"}]}}', 'needs string "rule"'),
        ('{"version": 1, "files": {"a.py": ["x"]}}', 'needs string "rule"'),
    ],
)
def test_bad_baselines_are_one_line_value_errors(tmp_path: Path, content: str,
                                                 expected: str) -> None:
    file = tmp_path / "baseline.json"
    file.write_text(content)
    with pytest.raises(ValueError) as info:
        load_baseline(file)
    message = str(info.value)
    assert message.startswith(f"{file}: ") and expected in message and "\n" not in message


def test_missing_baseline(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot read baseline"):
        load_baseline(tmp_path / "nope.json")
