"""Claims: a catch-all rule's findings give way to every other rule's on the same code
(neuronize/claims.py), with tiny rules defined here (names starting with ``_``: not registered)."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from neuronize.engine import run_source
from neuronize.transform import Evidence, Example, Safety, Transform
from neuronize.types import Options


class _Leftover(Transform):
    """Reports every ``"cuda"`` string (a catch-all)."""

    id, name, safety, evidence, tokens = "NRN998", "leftover", Safety.REPORT_ONLY, Evidence.DOC, (b"cuda",)
    catch_all = True

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if node.evaluated_value == "cuda":
            self.report(node, "left")


class _Specific(Transform):
    """Reports calls of ``report_call()``, ``if claim_if:`` statements and ``fix_me("cuda")`` strings
    (fixed to ``"neuron"``), and the argument of ``inner(...)``."""

    id, name, safety, evidence, tokens = "NRN101", "specific", Safety.SAFE, Evidence.DOC, (b"cuda",)

    def visit_Call(self, node: cst.Call) -> None:
        name = node.func.value if isinstance(node.func, cst.Name) else None
        if name == "report_call":
            self.report(node, "a call")
        elif name == "fix_me":
            self.fix(node.args[0].value, cst.SimpleString('"neuron"'), "fixed")
        elif name == "inner":
            self.report(node.args[0].value, "the inner argument")

    def visit_If(self, node: cst.If) -> None:
        if isinstance(node.test, cst.Name) and node.test.value == "claim_if":
            self.report(node, "an if")


def _findings(code: str, rules=(_Leftover, _Specific), fix: bool = False) -> list[tuple[int, str]]:
    result = run_source(textwrap.dedent(code).encode(), list(rules), Options(), fix=fix)
    assert result.error is None, result.error
    return [(f.line, f.rule) for f in result.findings]


def test_a_catch_all_finding_alone_is_kept() -> None:
    assert _findings('x = "cuda"\n') == [(1, "NRN998")]


def test_the_same_node_reported_or_fixed_by_another_rule_is_theirs() -> None:
    assert _findings('fix_me("cuda")\n') == [(1, "NRN101")]
    assert _findings('fix_me("cuda")\n', fix=True) == [(1, "NRN101")]


def test_a_node_inside_a_reported_expression_is_claimed() -> None:
    assert _findings('y = report_call(1, ("cuda", 2))\n') == [(1, "NRN101")]


def test_a_catch_all_node_around_a_reported_node_is_claimed() -> None:
    class _Around(_Leftover):
        def visit_SimpleString(self, node: cst.SimpleString) -> None:
            pass

        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Name) and node.func.value == "inner":
                self.report(node, "the whole call")

    assert _findings('inner("cuda")\n', rules=(_Around, _Specific)) == [(1, "NRN101")]


def test_a_reported_if_claims_its_test_not_its_body() -> None:
    code = """
        if claim_if:
            x = "cuda"
        elif y == "cuda":
            pass
    """
    # the `if` is reported (line 2); its body's string (3) and the `elif` test's (4) stay
    assert _findings(code) == [(2, "NRN101"), (3, "NRN998"), (4, "NRN998")]


def test_another_statement_is_not_claimed() -> None:
    assert _findings('report_call()\nx = "cuda"\n') == [(1, "NRN101"), (2, "NRN998")]


def test_without_the_other_rule_the_catch_all_reports_everything() -> None:
    assert _findings('fix_me("cuda")\n', rules=(_Leftover,)) == [(1, "NRN998")]


def test_a_suppressed_finding_still_claims_its_code() -> None:
    assert _findings('fix_me("cuda")  # neuronize: ignore[NRN101]\n') == []


def test_a_catch_all_rule_must_be_report_only() -> None:
    with pytest.raises(TypeError, match="catch-all rule must be report-only"):
        class UnsafeCatchAll(Transform):  # noqa: F841 - defining it is the test
            """x.

            What it does: x. Why on TorchNeuron: x. Example: x. Use instead: x. Fix safety: x. Evidence: x.
            """

            id, name, safety, evidence, tokens = "NRN997", "unsafe-catch-all", Safety.UNSAFE, Evidence.DOC, (b"x",)
            catch_all, section, references = True, "device", ("https://example.org",)
            examples = (Example("x\n"),)
