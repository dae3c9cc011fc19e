"""Claims: a catch-all rule's findings give way to every other rule's on the same code
(neuronize/decision/claims.py), with tiny rules defined here (names starting with ``_``: not registered)."""

from __future__ import annotations

import sys
import textwrap
from collections import defaultdict
from pathlib import Path

import libcst as cst
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fixture_cases import all_cases  # noqa: E402

from neuronize.analysis.engine import run_source  # noqa: E402
from neuronize.analysis.any_kind import run_kind  # noqa: E402
from neuronize.registry import all_rules  # noqa: E402
from neuronize.transform import Evidence, Example, Safety, Transform  # noqa: E402
from neuronize.types import Options, Target  # noqa: E402


class _Leftover(Transform):
    """Reports every ``"cuda"`` string (a catch-all)."""

    id, name, safety, evidence, tokens = "NRN998", "leftover", Safety.REPORT_ONLY, Evidence.DOC, (b"cuda",)
    catch_all, section = True, "device"

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if node.evaluated_value == "cuda":
            self.report(node, "left")


class _Specific(Transform):
    """Reports calls of ``report_call()``, ``if claim_if:`` statements and ``fix_me("cuda")`` strings
    (fixed to ``"neuron"``), and the argument of ``inner(...)``."""

    id, name, safety, evidence, tokens = "NRN101", "specific", Safety.SAFE, Evidence.DOC, (b"cuda",)
    section = "device"

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


#: rule pairs that still report the same code, each with what the two say: the rules' to-do list,
#: held strictly (a listed pair that no longer overlaps fails: remove its entry)
KNOWN_OVERLAPS = {
    frozenset({"NRN119", "NRN353"}): "`torch.cuda.profiler.stop()`: no Neuron equivalent (report) and "
                                     "removed as a CUDA profiler call (unsafe fix)",
    frozenset({"NRN102", "NRN404"}): "`.cuda()` fixed to the device, and reported for running before "
                                     "`init_process_group`",
    frozenset({"NRN501", "NRN502"}): "one `TrainingArguments(...)` call fixed for its fp16 options and for "
                                     "its compile backend, each edit spanning the whole call",
    frozenset({"NRN601", "NRN604"}): "a `torch==X+cuNNN` requirement line: the CUDA build pin and the "
                                     "`torch-neuronx` line added for it",
}


def _overlaps(target: Target) -> dict[frozenset[str], list[str]]:
    """Every fixture's before file through every rule: the rule pairs that report the same code."""
    rules, found, seen = all_rules(), defaultdict(list), set()
    for case in all_cases():
        if case.before in seen:
            continue
        seen.add(case.before)
        result = run_kind(case.before.read_bytes(), case.kind, rules, Options(target=target, unsafe_fixes=True),
                          path=case.before.name, fix=False)
        by_span = defaultdict(set)
        for f in result.findings:
            by_span[(f.line, f.column, f.end_line, f.end_column)].add(f.rule)
        for span, ids in by_span.items():
            if len(ids) > 1:
                found[frozenset(ids)].append(f"{case.id}:{span[0]}:{span[1]}")
    return found


@pytest.mark.parametrize("target", list(Target))
def test_two_rules_never_report_the_same_code(target: Target) -> None:
    """One finding per piece of code: a rule that sees what another already reports gives way to it.
    A catch-all rule (NRN999) does so through the claims, which the findings already went through;
    any other pair must be a known one."""
    found = _overlaps(target)
    unknown = {", ".join(sorted(pair)): places[:3] for pair, places in found.items() if pair not in KNOWN_OVERLAPS}
    assert not unknown, f"two rules report the same code: {unknown}"
    if target is Target.NEURON:
        gone = [", ".join(sorted(pair)) for pair in KNOWN_OVERLAPS if pair not in found]
        assert not gone, f"no longer overlapping, remove from KNOWN_OVERLAPS: {gone}"
