"""Start-up loads only what a command prints (issue 14 item 8). Which modules get imported is
asserted in a fresh interpreter; how long it takes is measured by benchmarks/bench.py, never here."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

PROBE = """
import json, sys
sys.argv = ["neuronize", *json.loads(sys.argv[1])]
from neuronize.cli import main
try:
    main()
except SystemExit:
    pass
sys.stdout.flush()
print("\\nMODULES=" + json.dumps(sorted(sys.modules)))
"""


def _modules(*args: str) -> set[str]:
    proc = subprocess.run([sys.executable, "-c", PROBE, json.dumps(args)], capture_output=True,
                          text=True, timeout=120, check=True)
    return set(json.loads(proc.stdout.rsplit("MODULES=", 1)[1]))


def _rule_modules(modules: set[str]) -> set[str]:
    """The rule modules among them: ``neuronize.transforms.<family>.<rule>``, not the helpers."""
    return {m for m in modules if m.startswith("neuronize.transforms.") and m.count(".") == 3
            and not any(part.startswith("_") for part in m.split("."))}


def test_version_imports_neither_libcst_nor_the_rules():
    modules = _modules("--version")
    assert "libcst" not in modules
    assert not any(m.startswith("neuronize.transforms") for m in modules)
    assert "neuronize.analysis.engine" not in modules and "neuronize.api" not in modules


@pytest.mark.parametrize(("code", "module"), [("NRN350", "runtime.cudnn_flag"), ("cuda-method", "device.cuda_method")])
def test_explain_loads_the_one_rule_it_prints(code, module):
    modules = _modules("explain", code)
    assert _rule_modules(modules) == {f"neuronize.transforms.{module}"}
    assert "neuronize.analysis.engine" not in modules and "neuronize.api" not in modules


def test_explain_an_evidence_mark_loads_no_rule():
    modules = _modules("explain", "INF")
    assert "libcst" not in modules and not _rule_modules(modules)


def test_rules_loads_the_rules_and_nothing_of_the_engine():
    from neuronize.registry import all_rules

    modules = _modules("rules")
    assert len(_rule_modules(modules)) == len({r.__module__ for r in all_rules()})
    for heavy in ("neuronize.analysis.engine", "neuronize.api", "neuronize.presenting.report", "neuronize.sources.cache"):
        assert heavy not in modules, heavy


def test_a_run_of_cached_files_imports_neither_libcst_nor_the_rules(tmp_path, monkeypatch):
    """What the run needs of the rules (ids, kinds, tokens) comes from the index kept beside the
    cached results; only a file to analyse imports them."""
    (tmp_path / "train.py").write_text('import torch\nx = torch.zeros(2).cuda()\n')
    (tmp_path / "util.py").write_text('print("no token here")\n')
    monkeypatch.setenv("NEURONIZE_CACHE_DIR", str(tmp_path / "cache"))
    first = _modules("check", "-q", str(tmp_path))
    assert "libcst" in first  # the cold run analysed train.py and stored the rule index
    assert list((tmp_path / "cache").rglob("rules-*.json"))
    warm = _modules("check", "-q", str(tmp_path))
    assert "libcst" not in warm and not _rule_modules(warm)
    assert "neuronize.analysis.engine" not in warm
    (tmp_path / "util.py").write_text('import torch\ny = torch.ones(1).cuda()\n')
    assert "libcst" in _modules("check", "-q", str(tmp_path))  # a changed file is analysed
