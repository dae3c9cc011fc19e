"""The README's rule table is generated from the rules and kept in sync."""

from __future__ import annotations

from pathlib import Path

from neuronize.presenting.docs import README_BEGIN, README_END, rules_markdown

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_rule_table_is_current():
    text = README.read_text(encoding="utf-8")
    start = text.index(README_BEGIN) + len(README_BEGIN)
    end = text.index(README_END)
    assert text[start:end].strip() == rules_markdown().strip(), (
        "README rule table is stale: run `python -m neuronize.presenting.docs` to regenerate it"
    )
