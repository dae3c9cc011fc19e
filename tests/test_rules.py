"""Rule metadata and every rule's embedded examples."""

from __future__ import annotations

import ast
import textwrap

import pytest

from neuronize.analysis.context import Options
from neuronize.analysis.engine import run_source
from neuronize.analysis.any_kind import run_kind
from neuronize.registry import all_rules
from neuronize.transform import DOC_HEADINGS, Example, Safety
from neuronize.types import Target

RULES = all_rules()
EXAMPLES = [(rule, i, ex) for rule in RULES for i, ex in enumerate(rule.examples)]


@pytest.mark.parametrize(
    "rule,index,example", EXAMPLES, ids=[f"{r.id}-{i}" for r, i, _ in EXAMPLES]
)
def test_example(rule, index, example):
    before = textwrap.dedent(example.before).lstrip("\n")
    kind = rule.kinds[0]
    options = example.options()
    if kind == "python":  # the rule's own edit, as it wrote it (tests/test_written_code.py: the rest)
        result = run_source(before.encode(), (rule,), options, tidy=False)
    else:
        result = run_kind(before.encode(), kind, (rule,), options)
    assert result.error is None, result.error
    found = [f for f in result.findings if f.rule == rule.id]
    if not example.finds:
        assert not found, f"{rule.id} example {index} finds nothing, but: {found}"
        assert result.output is None, result.output.decode()
        return
    assert found, f"{rule.id} example {index}: no finding"
    if example.after is None or textwrap.dedent(example.after).lstrip("\n") == before:
        assert result.output is None, result.output.decode()
        return
    after = textwrap.dedent(example.after).lstrip("\n")
    assert result.output is not None, f"{rule.id} example {index}: nothing changed"
    assert result.output.decode() == after
    if kind == "python":
        ast.parse(result.output)
    assert run_kind(result.output, kind, (rule,), example.options(unsafe_fixes=True)).output is None


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_a_rule_shows_what_it_finds(rule):
    assert any(example.finds for example in rule.examples), f"{rule.id}: every example finds nothing"


def test_an_example_that_finds_nothing_has_no_after():
    with pytest.raises(TypeError, match="finds nothing"):
        Example("x = 1\n", "x = 2\n", finds=False)
    assert Example("x = 1\n", target="cpu").target is Target.CPU


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_rule_documentation(rule):
    doc = rule.documentation()
    for heading in DOC_HEADINGS:
        assert heading in doc
    assert rule.summary()
    if rule.evidence.weak:
        assert rule.safety is not Safety.SAFE
