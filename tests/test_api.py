"""``neuronize.api.run`` used as a library: a request in, a RunResult out, nothing printed, files
written only in fix mode, errors as values."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from neuronize import api
from neuronize.api import RunRequest
from neuronize.types import RunResult

CUDA = b"import torch\n\nx = torch.zeros(3).cuda()\ntorch.cuda.synchronize()\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_bytes(CUDA)
    (tmp_path / "clean.py").write_bytes(b"print('nothing for CUDA here')\n")
    return tmp_path


def _run(capsys: pytest.CaptureFixture[str], request: RunRequest, **kw: Any) -> RunResult:
    """``api.run``, checking it printed nothing."""
    result = api.run(request, **kw)
    assert capsys.readouterr() == ("", "")
    return result


def _rules(result: RunResult, display: str) -> list[str]:
    return [x.rule for f in result.files if f.display == display for x in f.result.findings]


def test_check_reports_and_writes_nothing(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = _run(capsys, RunRequest(paths=(str(project),), cache=False))
    assert result.error is None
    assert sorted(f.display for f in result.files) == sorted(str(project / n) for n in ("train.py", "clean.py"))
    assert _rules(result, str(project / "train.py")) == ["NRN102", "NRN111"]
    assert not any(f.result.changed or f.written for f in result.files)
    assert (project / "train.py").read_bytes() == CUDA


def test_fix_writes_the_changed_files(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = _run(capsys, RunRequest(paths=(str(project),), mode="fix", cache=False))
    (train,) = [f for f in result.files if f.written]
    assert train.display == str(project / "train.py")
    assert (project / "train.py").read_bytes() == train.result.output != CUDA
    assert all(x.applied for x in train.result.findings)


@pytest.mark.parametrize("request_", [RunRequest(mode="fix", write=False), RunRequest(mode="report")],
                         ids=["fix-diff", "report"])
def test_only_fix_writes(project: Path, capsys: pytest.CaptureFixture[str], request_: RunRequest) -> None:
    result = _run(capsys, dataclasses.replace(request_, paths=(str(project),), cache=False))
    (changed,) = result.changed
    assert not changed.written and changed.source == CUDA
    assert (project / "train.py").read_bytes() == CUDA


def test_code_given_as_bytes(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = _run(capsys, RunRequest(stdin=CUDA, stdin_filename="model.py", mode="fix"))
    (f,) = result.files
    assert (f.display, f.path, f.written) == ("model.py", None, False)
    assert f.result.output is not None and b".cuda()" not in f.result.output
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("request_", "error"), [
    (RunRequest(select=("NRN1,nonsense",)), "--select nonsense: no rule has that id"),
    (RunRequest(kinds=("python,cobol",)), "unknown source kind 'cobol'"),
    (RunRequest(baseline=Path("missing.json")), "missing.json: cannot read baseline"),
    (RunRequest(target="gpu"), "'gpu' is not a valid Target"),
])
def test_errors_come_back_as_values(project: Path, capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch, request_: RunRequest, error: str) -> None:
    monkeypatch.chdir(project)
    result = _run(capsys, dataclasses.replace(request_, paths=(".",), mode="fix"))
    assert result.error is not None and error in result.error
    assert result.files == [] and (project / "train.py").read_bytes() == CUDA


def test_a_baseline_written_then_read(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    baseline = project / "baseline.json"
    paths = (str(project),)
    written = _run(capsys, RunRequest(paths=paths, write_baseline=baseline, cache=False))
    assert written.baseline_written == 2 and baseline.is_file()
    result = _run(capsys, RunRequest(paths=paths, baseline=baseline, cache=False))
    assert (result.baselined, _rules(result, str(project / "train.py"))) == (2, [])
    # fix leaves the code of a baselined finding as it is
    fixed = _run(capsys, RunRequest(paths=paths, mode="fix", baseline=baseline, cache=False))
    assert not any(f.written for f in fixed.files)
    assert (project / "train.py").read_bytes() == CUDA


def test_the_write_step_can_be_replaced(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    seen: list[RunResult] = []

    def writer(run: RunResult) -> RunResult:
        seen.append(run)
        return run

    request = RunRequest(paths=(str(project),), mode="fix", cache=False)
    result = _run(capsys, request, writer=writer)
    assert seen == [result] and (project / "train.py").read_bytes() == CUDA
    _run(capsys, dataclasses.replace(request, write=False), writer=writer)
    assert len(seen) == 1  # --diff writes nothing: no write step


def test_settings_and_files_without_looking(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "pyproject.toml").write_text('[tool.neuronize]\ntarget = "cpu"\n')
    settings = _run(capsys, RunRequest(paths=(str(project / "train.py"),), show_settings=True))
    assert settings.files == [] and settings.settings is not None and '"cpu"' in settings.settings
    listing = _run(capsys, RunRequest(paths=(str(project),), show_files=True))
    names = ("train.py", "clean.py", "pyproject.toml")  # a pyproject.toml is a source too
    assert sorted(f.display for f in listing.files) == sorted(str(project / n) for n in names)
    assert not any(f.result.findings for f in listing.files)
    assert set(listing.configs.values()) == {project / "pyproject.toml"}


def test_results_cached_where_asked(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cache = project / "cache"
    request = RunRequest(paths=(str(project / "train.py"),), cache_dir=cache)
    first = _run(capsys, request)
    assert any(cache.rglob("*"))
    assert _run(capsys, request).files == first.files


def test_a_broken_configuration_met_while_listing(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "sub").mkdir()
    (project / "sub" / "pyproject.toml").write_text("[tool.neuronize]\nselect = 3\n")
    (project / "sub" / "more.py").write_bytes(CUDA)
    for request in (RunRequest(paths=(str(project),)), RunRequest(paths=(str(project),), show_files=True)):
        result = _run(capsys, request)
        assert result.error is not None and "select: expected a list of strings" in result.error
