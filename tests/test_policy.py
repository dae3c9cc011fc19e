"""The decision stage (neuronize.decision.policy): rules propose, one stage decides, in its documented order."""

from __future__ import annotations

import libcst as cst

from neuronize.analysis.engine import run_source
from neuronize.transform import Evidence, Safety, Transform
from neuronize.types import Options, Target


class _Propose(Transform):
    """A rule that proposes one safe fix for every ``.cuda()`` and decides nothing."""

    id = "NRN199"
    name = "propose-only"
    safety = Safety.SAFE
    evidence = Evidence.DOC
    tokens = (b".cuda(",)
    section = "device"
    references = ("https://example.org",)

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "cuda":
            self.fix(node, node.with_changes(func=node.func.with_changes(attr=cst.Name("to")),
                                             args=[cst.Arg(cst.SimpleString('"neuron"'))]), "`.cuda()` -> `.to(\"neuron\")`")


class _Inferred(_Propose):
    evidence = Evidence.INF


def _notes(code: str, rule: type[Transform] = _Propose, **options: object) -> list[tuple[str, ...]]:
    result = run_source(code.encode(), [rule], Options(**options), fix=False)  # type: ignore[arg-type]
    return [(str(f.safety), str(f.fixable), *(kind for kind, _ in f.notes)) for f in result.findings]


def test_the_fix_a_rule_proposes_is_applied_when_nothing_holds_it_back():
    assert _notes("x = y.cuda()\n") == [("safe", "True")]


def test_target_comes_first():
    # a role (the file holds GPU kernels) and a dispatch: under another target, the target says why
    kernel = "import triton\n\nif torch.cuda.is_available():\n    x = y.cuda()\nelif torch.backends.mps.is_available():\n    x = y\n"
    assert _notes(kernel, target=Target.CPU) == [("report-only", "False", "target")]
    assert _notes(kernel) == [("report-only", "False", "role")]
    assert _notes(kernel.replace("import triton\n", "")) == [("report-only", "False", "dispatch")]


def test_weak_evidence_makes_a_safe_fix_unsafe_and_a_suppression_drops_it():
    assert _notes("x = y.cuda()\n", _Inferred) == [("unsafe", "True")]
    suppressed = run_source(b"x = y.cuda()  # neuronize: ignore[NRN199]\n", [_Inferred], fix=False)
    assert [f.rule for f in suppressed.findings] == ["NRN000"]  # this test's rule is not registered


def test_the_rendered_text_shows_inline_notes_then_the_evidence_then_the_decisions():
    code = "if torch.cuda.is_available():\n    x = y.cuda()\nelif torch.backends.mps.is_available():\n    x = y\n"
    (finding,) = run_source(code.encode(), [_Inferred], Options(), fix=False).findings
    assert finding.message == '`.cuda()` -> `.to("neuron")`' and finding.subject == ".cuda()"
    assert finding.text.startswith(finding.message + "; not applied: this branch is part of a dispatch")
    assert finding.text.endswith("if it has none [evidence: INF]")
    data = finding.to_json("m.py")
    assert data["message"] == finding.text and data["evidence"] == "INF" and data["subject"] == ".cuda()"
    assert [n["kind"] for n in data["notes"]] == ["dispatch"]  # type: ignore[union-attr]


class _InFront(_Propose):
    """Puts Neuron in front of a chooser that starts with CUDA, keeping the whole chooser."""

    tokens = (b"cuda",)

    def visit_Call(self, node: cst.Call) -> None:
        return None

    def visit_IfExp(self, node: cst.IfExp) -> None:
        if isinstance(node.body, cst.SimpleString) and node.body.value == '"cuda"':
            self.fix(node, self.replacement(node), "Neuron in front")

    def replacement(self, node: cst.IfExp) -> cst.BaseExpression:
        return cst.IfExp(test=cst.parse_expression("on_neuron()"), body=cst.SimpleString('"neuron"'),
                         orelse=node.with_changes(lpar=(), rpar=()))


class _ArmOnly(_InFront):
    """Rewrites the chooser's CUDA arm instead (CUDA would lose its branch)."""

    def replacement(self, node: cst.IfExp) -> cst.BaseExpression:
        return node.with_changes(body=cst.SimpleString('"neuron"'))


def test_a_choice_in_front_of_a_whole_device_chooser_is_not_held_as_a_dispatch():
    chooser = '"cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"'
    for code in (f"def pick():\n    return {chooser}\n", f"def pick():\n    return (\n        {chooser}\n    )\n"):
        assert _notes(code, _InFront) == [("safe", "True")]
        assert _notes(code, _ArmOnly) == [("report-only", "False", "dispatch")]
