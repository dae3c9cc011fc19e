"""Every class in transforms/ stays under 150 code lines: a rule that grows splits its planning
into pure functions in a helper module (tested in tests/test_plans.py), along its seams.

Code lines are the class's lines that are neither blank nor comments, its own docstring (the
rule's user documentation) excluded.
"""

from __future__ import annotations

import ast
from pathlib import Path

TRANSFORMS = Path(__file__).resolve().parent.parent / "transforms"
LIMIT = 150


def code_lines(source: str, node: ast.ClassDef) -> int:
    """The code lines of the class ``node`` in ``source`` (see the module docstring)."""
    lines = source.splitlines()
    skipped: set[int] = set()
    first = node.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        skipped.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    end = node.end_lineno or node.lineno
    return sum(1 for number in range(node.lineno, end + 1)
               if number not in skipped and lines[number - 1].strip()
               and not lines[number - 1].strip().startswith("#"))


def _classes() -> list[tuple[str, int]]:
    found = []
    for path in sorted(TRANSFORMS.rglob("*.py")):  # the family packages and _helpers/
        source = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ClassDef):
                found.append((f"{path.relative_to(TRANSFORMS)}:{node.name}", code_lines(source, node)))
    return found


def test_every_class_in_transforms_stays_under_the_limit():
    over = {where: size for where, size in _classes() if size > LIMIT}
    assert not over, f"over {LIMIT} code lines (split the planning into pure functions): {over}"


def test_the_count_leaves_out_blank_lines_comments_and_the_docstring():
    source = 'class Rule:\n    """Doc.\n\n    More doc.\n    """\n\n    # why\n    x = 1\n\n    def f(self):\n        return 2\n'
    node = ast.parse(source).body[0]
    assert isinstance(node, ast.ClassDef) and code_lines(source, node) == 4
