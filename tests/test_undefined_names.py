"""A property of every fixture: the fixes introduce no undefined name. Compares the stored
``.before.py`` and ``.after.py`` of each case (no engine run: cheap); the engine itself refuses
such an output (tests/test_engine_groups.py)."""

from __future__ import annotations

import ast

import pytest

from fixture_cases import all_cases
from neuronize.analysis.undefined import introduced

CASES = [c for c in all_cases() if c.after.exists() and c.after.suffix == ".py"]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_fixes_introduce_no_undefined_name(case) -> None:
    new = introduced(ast.parse(case.before.read_bytes()), ast.parse(case.after.read_bytes()))
    assert not new, f"{case.id}: the fixes introduce undefined name(s) {sorted(new)}"
