"""The byte pre-filter is derived from the tokens every rule declares, and covers every rule.

A rule whose example does not contain one of its own tokens would be silently filtered out of
real files: these tests fail as soon as a rule (new or edited) is in that state.
"""

from __future__ import annotations

import textwrap

import pytest

from neuronize.analysis.context import Options
from neuronize.analysis.engine import run_source
from neuronize.analysis import engine
from neuronize.analysis.prefilter import candidates, prefilter_for
from neuronize.analysis.any_kind import run_kind
from neuronize.registry import all_rules
from neuronize.transform import Evidence, Safety, Transform

RULES = all_rules()
COMBINED = prefilter_for(RULES)
#: the examples a rule finds something in (the pre-filter may skip an ``Example(finds=False)``)
EXAMPLES = [(rule, i, ex) for rule in RULES for i, ex in enumerate(rule.examples) if ex.finds]


def _before(example) -> bytes:  # type: ignore[no-untyped-def]
    return textwrap.dedent(example.before).lstrip("\n").encode()


@pytest.mark.parametrize("rule,index,example", EXAMPLES,
                         ids=[f"{r.id}-{i}" for r, i, _ in EXAMPLES])
def test_every_example_passes_its_rules_filter(rule, index, example):
    source = _before(example)
    assert prefilter_for([rule], rule.kinds[0]).search(source), (
        f"{rule.id} example {index} contains none of the rule's tokens {rule.tokens}: "
        "the pre-filter would skip it")
    assert prefilter_for(RULES, rule.kinds[0]).search(source)


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_rule_tokens_are_in_the_combined_filter(rule):
    for token in rule.tokens:
        assert prefilter_for(RULES, rule.kinds[0]).search(token), token
        assert prefilter_for([rule], rule.kinds[0]).search(token), token


@pytest.mark.parametrize("rule,index,example", EXAMPLES,
                         ids=[f"{r.id}-{i}" for r, i, _ in EXAMPLES])
def test_examples_still_fire_through_the_filter(rule, index, example):
    """With the whole rule set and its derived filter, the example is parsed and found."""
    kind = rule.kinds[0]
    result = run_kind(_before(example), kind, RULES, example.options(),
                      prefilter=prefilter_for(RULES, kind), fix=False)
    assert not result.skipped
    assert any(f.rule == rule.id for f in result.findings)


def _tokenless(text: str) -> bytes:
    source = textwrap.dedent(text).encode()
    assert not COMBINED.search(source), COMBINED.search(source)
    return source


def test_file_without_tokens_is_skipped_unparsed():
    source = _tokenless('''\
        import torch
        from torch import nn


        class Classifier(nn.Module):
            def __init__(self, width: int) -> None:
                super().__init__()
                self.head = nn.Linear(width, 10)

            def forward(self, x):
                return self.head(x).relu()
        ''')
    result = run_source(source, RULES, Options())
    assert result.skipped
    assert result.findings == () and result.output is None and result.error is None


def test_tokenless_syntax_error_is_not_even_parsed():
    source = _tokenless("def broken(:\n    return 1\n")
    result = run_source(source, RULES, Options())
    assert result.skipped and result.error is None


def test_empty_rule_set_filters_everything():
    pattern = prefilter_for([])
    assert not pattern.search(b"x.cuda()\n")
    assert run_source(b"x.cuda()\n", (), Options()).skipped


def test_filter_is_derived_from_declared_tokens():
    """Every token of every rule passes the combined filter, and the filter holds nothing else
    (a token containing a shorter one is left out: the shorter one already decides). The
    filter of Python files holds the tokens of the rules that read Python only."""
    declared = {tok for rule in RULES if "python" in rule.kinds for tok in rule.tokens}
    for token in declared:
        assert COMBINED.search(token), token
    assert set(COMBINED.tokens) <= declared
    assert all(not any(a != b and a in b for b in COMBINED.tokens) for a in COMBINED.tokens)
    assert not COMBINED.search(b"FROM ubuntu\nNGPU=8\nMULTI_GPU: all\n"), "a line rule's tokens leak in"


class _Spelled(Transform):
    """Declares ``.half(``."""

    id, name, safety, evidence, tokens = "NRN997", "spelled", Safety.REPORT_ONLY, Evidence.DOC, (b".half(",)


class _Punctuation(Transform):
    """Declares a token with no name part."""

    id, name, safety, evidence, tokens = "NRN996", "punctuation", Safety.REPORT_ONLY, Evidence.DOC, (b"(",)


def test_candidates_are_the_rules_whose_token_cores_the_file_holds():
    """A rule walks a file only when the file holds the name part of one of its tokens, in any
    case and spacing; a token without a name part runs its rule everywhere."""
    rules = [_Spelled, _Punctuation]
    assert candidates(b"model.half()\n", rules) == rules
    assert candidates(b"model . HALF ()\n", rules) == rules  # looser than the token: still run
    assert candidates(b"behalf_of = 1\n", rules) == rules  # a core inside a longer name
    assert candidates(b"x.cuda()\n", rules) == [_Punctuation]
    assert candidates(b"\xff\xfehal\xfff\n", rules) == [_Punctuation]  # not a name: no core


@pytest.mark.parametrize("rule,index,example", EXAMPLES,
                         ids=[f"{r.id}-{i}" for r, i, _ in EXAMPLES])
def test_examples_give_the_same_result_when_every_rule_walks(rule, index, example, monkeypatch):
    """Running only the rules a file can wake changes no finding and no output."""
    if "python" not in rule.kinds:
        return
    source = _before(example)
    options = example.options()
    woken = run_source(source, RULES, options)
    monkeypatch.setattr(engine, "candidates", lambda text, rules: list(rules))
    assert run_source(source, RULES, options) == woken
