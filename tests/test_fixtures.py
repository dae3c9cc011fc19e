"""Every fixture: byte-exact output, findings snapshot, output parses, second run changes nothing.

Update snapshots with ``pytest tests/test_fixtures.py --snapshot-update`` and review the
``git diff`` of fixtures/.
"""

from __future__ import annotations

import ast
import json
import shutil
import subprocess

import pytest

from fixture_cases import all_cases, findings_text
from neuronize.registry import all_rules
from neuronize.sources.kinds import SourceKind

CASES = all_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_fixture(case, snapshot):
    snapshot.snapshot_dir = case.folder
    result = case.run()
    snapshot.assert_match(findings_text(result), case.findings.name)
    if result.output is None:
        assert not case.after.exists(), f"{case.id}: expected a change to {case.after.name}, got none"
        return
    snapshot.assert_match(result.output, case.after.name)
    assert_valid(case.kind, result.output)
    again = case.run(result.output)
    assert again.error is None, again.error
    assert again.output is None, f"{case.id}: a second run changes the output again"


def test_every_rule_has_fixtures(fixtures_dir):
    folders = {p.name for p in fixtures_dir.iterdir() if p.is_dir()}
    for rule in all_rules():
        folder = f"{rule.id}_{rule.name}"
        assert folder in folders, f"{rule.id} has no fixture folder fixtures/{folder}/"
        assert any((fixtures_dir / folder).glob("*.before.*")), f"{folder} has no case"


def test_every_fixture_folder_belongs_to_a_rule(fixtures_dir):
    expected = {f"{r.id}_{r.name}" for r in all_rules()} | {"pipeline", "notebooks", "io", "differential", "audit", "project"}
    for folder in fixtures_dir.iterdir():
        if folder.is_dir():
            assert folder.name in expected, f"fixtures/{folder.name} belongs to no rule"


def assert_valid(kind: SourceKind, output: bytes) -> None:
    """The output is still what its kind must be: Python parses, JSON loads, shell passes
    ``bash -n``."""
    if kind is SourceKind.PYTHON:
        ast.parse(output)
    elif kind is SourceKind.JSON_CONFIG:
        json.loads(output)
    elif kind is SourceKind.SHELL and shutil.which("bash"):
        proc = subprocess.run(["bash", "-n"], input=output, capture_output=True)
        assert proc.returncode == 0, proc.stderr.decode()
