"""Everything about a rule lives on the rule: section, effort and references are class
attributes, validated when the class is defined (like the docstring)."""

from __future__ import annotations

import pytest

from neuronize.presenting.docs import explain_rule
from neuronize.registry import all_rules
from neuronize.presenting.report import kind_of
from neuronize.transform import EFFORTS, SECTIONS, Evidence, Example, Safety, Transform

DOC = """Finds a test pattern.

    What it does:
        Nothing.

    Why on TorchNeuron:
        Testing.

    Example:
        x = 1

    Use instead:
        x = 1

    Fix safety:
        Report-only.

    Evidence:
        INF: {evidence}
"""


def _rule(evidence: str = "a test.", **attrs: object) -> type[Transform]:
    body: dict[str, object] = {
        "__doc__": DOC.format(evidence=evidence), "abstract": False, "id": "NRN999", "name": "test-rule",
        "safety": Safety.REPORT_ONLY, "evidence": Evidence.INF, "tokens": (b"x",),
        "examples": (Example("x = 1\n"),), "section": "other-stuff",
        "references": ("https://example.org/doc",),
    }
    body.update(attrs)
    return type("Probe", (Transform,), body)


@pytest.mark.parametrize("attrs, error", [
    ({"section": "nowhere"}, "section"),
    ({"section": "kernels", "effort": "huge"}, "effort"),
    ({"section": "kernels", "references": ()}, "references"),
    ({"section": "kernels", "references": ("see the docs",)}, "references"),
    ({"section": "kernels", "references": ["https://example.org/doc"]}, "references"),
])
def test_metadata_is_validated_at_class_creation(attrs, error):
    with pytest.raises(TypeError, match=error):
        _rule(**attrs)


def test_reference_file_labels_are_refused_in_the_docstring():
    with pytest.raises(TypeError, match="internal reference file"):
        _rule("reference D8 says so.", section="kernels")
    with pytest.raises(TypeError, match="internal reference file"):
        _rule("§3.1 says so.", section="kernels")


def test_every_rule_declares_its_metadata():
    for rule in all_rules():
        assert rule.section in SECTIONS and rule.effort in EFFORTS, rule.id
        assert kind_of(rule.id) == (rule.section, SECTIONS[rule.section])
        assert rule.references and all(u.startswith("https://") for u in rule.references), rule.id


def test_explain_prints_the_references_and_no_reference_labels():
    for rule in all_rules():
        text = explain_rule(rule)
        assert "References:" in text and all(u in text for u in rule.references), rule.id
        assert "reference D" not in text and "§" not in text, rule.id
