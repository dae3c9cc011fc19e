"""Discovery and running of fixture cases (fixtures/<ID>_<name>/<case>.before.py ...).

Case names choose options: a name ending in ``_safe`` runs without ``--unsafe-fixes`` (every other
case runs with them, to show all a rule can do); ``_target-cpu`` / ``_target-accelerator`` pick a
target; ``_transformers-4.16`` runs in a project whose transformers requirement stops at that
release. Such a variant needs no ``.before.py`` of its own when it runs ``<case>.before.py``. Cases in a rule's folder run that rule alone; ``fixtures/pipeline/`` runs every rule.

Other kinds of source: ``<case>.before.<file name>`` (``deps.before.requirements.txt``,
``launch.before.train.sh``, ``image.before.Dockerfile``, ``ds.before.ds_config.json``) is read as
the kind that file name (and, for YAML/JSON, its content) gives; its output is
``<case>.after.<file name>``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from neuronize.analysis.context import Options
from neuronize.types import SourceResult
from neuronize.analysis.any_kind import run_kind
from neuronize.sources.kinds import SourceKind, kind_by_content, kind_by_name
from neuronize.registry import all_rules, rule_by_code
from neuronize.transform import Transform

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@dataclass(frozen=True)
class Case:
    folder: Path
    name: str
    before: Path

    @property
    def id(self) -> str:
        return f"{self.folder.name}/{self.name}"

    @property
    def file_name(self) -> str:
        """The name the case's file stands for (``x.py``, ``requirements.txt``, ``Dockerfile``)."""
        rest = self.before.name.split(".before.", 1)[1]
        return f"{self.name}.py" if rest == "py" else rest

    @property
    def kind(self) -> SourceKind:
        name = Path(self.file_name)
        return kind_by_name(name) or kind_by_content(name, self.before.read_bytes()) or SourceKind.PYTHON

    @property
    def after(self) -> Path:
        rest = self.before.name.split(".before.", 1)[1]
        return self.folder / f"{self.name}.after.{rest}"

    @property
    def findings(self) -> Path:
        return self.folder / f"{self.name}.findings.txt"

    @property
    def rules(self) -> tuple[type[Transform], ...]:
        if self.folder.name == "pipeline":
            return all_rules()
        rule = rule_by_code(self.folder.name.split("_", 1)[0])
        assert rule is not None, f"fixture folder {self.folder.name} names no rule"
        return (rule,)

    @property
    def options(self) -> Options:
        target = "neuron"
        for candidate in ("cpu", "accelerator"):
            if f"_target-{candidate}" in self.name:
                target = candidate
        pinned = _TRANSFORMERS.search(self.name)
        newest = (("transformers", (int(pinned[1]), int(pinned[2]))),) if pinned else None
        return Options(target=target, unsafe_fixes=not self.name.endswith("_safe"), newest_releases=newest)

    def run(self, source: bytes | None = None) -> SourceResult:
        data = self.before.read_bytes() if source is None else source
        return run_kind(data, self.kind, self.rules, self.options, path=self.before.name)


#: the newest transformers release a case's project admits (``_transformers-4.16``)
_TRANSFORMERS = re.compile(r"_transformers-(\d+)\.(\d+)")
#: the option suffixes of a case name (see the module docstring)
_VARIANT = re.compile(r"(_safe|_target-(?:cpu|accelerator))+$")


def all_cases() -> list[Case]:
    """Every case: one per ``.before.py``, plus variants (``<case>_safe``,
    ``<case>_target-<t>``) that only have expected outputs (``.findings.txt``, maybe
    ``.after.py``) and run ``<case>.before.py`` with their options."""
    cases = []
    for before in sorted(FIXTURES.glob("*/*.before.*")):
        if before.name.endswith(".before.ipynb"):
            continue  # notebooks have their own tests (fixtures/notebooks)
        name = before.name.split(".before.", 1)[0]
        cases.append(Case(before.parent, name, before))
    for findings in sorted(FIXTURES.glob("*/*.findings.txt")):
        name = findings.name[: -len(".findings.txt")]
        if (findings.parent / f"{name}.before.py").exists() or not _VARIANT.search(name):
            continue
        base = findings.parent / f"{_VARIANT.sub('', name)}.before.py"
        assert base.exists(), f"{findings}: no {base.name} to run the variant on"
        cases.append(Case(findings.parent, name, base))
    return sorted(cases, key=lambda c: c.id)


def findings_text(result: SourceResult) -> str:
    lines = [
        f"{f.line}:{f.column} {f.rule} {f.safety.value} {f.text}" for f in result.findings
    ]
    if result.error is not None:
        lines.append(f"error: {result.error.line}: {result.error.message}")
    return "\n".join(lines) + ("\n" if lines else "")
