"""Configuration per file, as ruff does it: each file uses the nearest configuration above it,
whatever the order of the arguments or the current directory; ``--show-settings`` and
``--show-files`` say what a run would use."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import neuronize
from neuronize.sources.config import ConfigError, find_config, load_config
from neuronize.sources.settings import COMMAND_LINE, Overrides, Resolver

SCRIPT = b"import torch\nx = torch.zeros(2).cuda()\nif torch.cuda.is_available():\n    pass\n"


@pytest.fixture
def mono(tmp_path: Path) -> Path:
    """A monorepo: a root configuration, ``a/`` with its own pyproject, ``b/`` with a
    neuronize.toml beside an unrelated pyproject, ``c/`` with none of its own."""
    (tmp_path / "pyproject.toml").write_text('[tool.neuronize]\ntarget = "neuron"\n')
    for name in ("a/src", "b", "c"):
        (tmp_path / name).mkdir(parents=True)
    (tmp_path / "a" / "pyproject.toml").write_text(
        '[project]\nname = "a"\n[tool.neuronize]\ntarget = "cpu"\nignore = ["NRN110"]\n'
        'extend-exclude = ["generated/"]\n')
    (tmp_path / "b" / "pyproject.toml").write_text('[tool.neuronize]\ntarget = "cpu"\n')
    (tmp_path / "b" / "neuronize.toml").write_text('target = "accelerator"\n')
    (tmp_path / "a" / "generated").mkdir()
    for path in ("a/src/m.py", "a/generated/g.py", "b/m.py", "c/m.py"):
        (tmp_path / path).write_bytes(SCRIPT)
    return tmp_path


def _lines(proc) -> list[str]:  # type: ignore[no-untyped-def]
    return proc.stdout.decode().splitlines()


def test_each_file_uses_its_nearest_configuration_in_any_order(mono: Path) -> None:
    expected = {
        "a/src/m.py:2:5 NRN102 [safe fix] `.cuda()` -> `.to(\"cpu\")`",
        "b/m.py:3:4 NRN110 [safe fix] `torch.cuda.is_available()` -> `torch.accelerator.is_available()`",
        "c/m.py:2:5 NRN102 [safe fix] `.cuda()` -> `.to(\"neuron\")`",
    }
    for order in (("a", "b", "c"), ("c", "b", "a"), ("b", "a", "c")):
        proc = neuronize("check", *order, cwd=mono)
        assert proc.returncode == 1
        lines = set(_lines(proc))
        assert expected <= lines, lines
        assert not any(line.startswith("a/src/m.py:3") for line in lines)  # a/ ignores NRN110
        assert not any("generated" in line for line in lines)  # a/'s own exclude


def test_the_current_directory_does_not_change_the_settings(mono: Path) -> None:
    from_inside = neuronize("check", "src/m.py", "../b/m.py", cwd=mono / "a")
    assert "src/m.py:2:5 NRN102 [safe fix] `.cuda()` -> `.to(\"cpu\")`" in _lines(from_inside)
    assert any(line.startswith("../b/m.py:2:5 NRN102") and "accelerator" in line
               for line in _lines(from_inside))
    from_elsewhere = neuronize("check", str(mono / "a" / "src" / "m.py"), cwd=mono / "c")
    assert "`.to(\"cpu\")`" in from_elsewhere.stdout.decode()


def test_config_option_makes_one_file_govern_all(mono: Path) -> None:
    proc = neuronize("check", "--config", "pyproject.toml", "a", "b", cwd=mono)
    out = proc.stdout.decode()
    assert out.count('`.to("neuron")`') == 3  # a/src, a/generated (its exclude is gone), b
    assert "cpu" not in out


def test_command_line_wins_over_every_configuration(mono: Path) -> None:
    proc = neuronize("check", "--target", "cpu", "--select", "NRN110", "a", "b", "c", cwd=mono)
    assert {line.split()[0] for line in _lines(proc)} == {"a/src/m.py:3:4", "b/m.py:3:4", "c/m.py:3:4"}


def test_neuronize_toml_wins_over_pyproject_in_its_folder(mono: Path) -> None:
    assert find_config(mono / "b" / "m.py") == mono / "b" / "neuronize.toml"
    assert load_config(mono / "b" / "neuronize.toml").target == "accelerator"
    (mono / "b" / "neuronize.toml").write_text('target = "accelerator"\nunsafe_fix = true\n')
    with pytest.raises(ConfigError, match=r"neuronize.toml: unknown key 'unsafe_fix' \(did you mean "
                                          r"'unsafe-fixes'\?"):
        load_config(mono / "b" / "neuronize.toml")


def test_a_broken_configuration_met_during_the_run_is_an_error(mono: Path) -> None:
    (mono / "c" / "pyproject.toml").write_text("[tool.neuronize]\nselect = [\n")
    proc = neuronize("check", "a", "c", cwd=mono)
    assert proc.returncode == 2
    assert "c/pyproject.toml: invalid TOML" in proc.stderr.decode()


def test_show_settings_names_the_origin_of_each_setting(mono: Path) -> None:
    proc = neuronize("check", "--show-settings", "--unsafe-fixes", "a/src/m.py", cwd=mono)
    assert proc.returncode == 0
    out = proc.stdout.decode()
    config = str(mono / "a" / "pyproject.toml")
    assert out.startswith(f"Settings for a/src/m.py\n  config file: {config}\n")
    rows = {line.split()[0]: line for line in out.splitlines()[2:]}
    assert rows["target"].split()[1] == '"cpu"' and rows["target"].endswith(f"({config})")
    assert rows["ignore"].split()[1] == '["NRN110"]'
    assert rows["unsafe-fixes"].split()[1] == "true"
    assert rows["unsafe-fixes"].endswith(f"({COMMAND_LINE})")
    assert rows["select"].endswith("(default)")
    assert "NRN110" not in rows["rules"] and "NRN102" in rows["rules"]


def test_show_files_lists_what_would_be_checked(mono: Path) -> None:
    proc = neuronize("check", "--show-files", ".", cwd=mono)
    assert proc.returncode == 0
    # a pyproject.toml is a source too (its dependency tables: the whole-repository rules)
    assert _lines(proc) == ["a/pyproject.toml", "a/src/m.py", "b/m.py", "b/pyproject.toml", "c/m.py",
                            "pyproject.toml"]
    python_only = neuronize("check", "--show-files", "--kinds", "python", ".", cwd=mono)
    assert _lines(python_only) == ["a/src/m.py", "b/m.py", "c/m.py"]
    verbose = neuronize("check", "--show-files", "-v", "b", cwd=mono)
    assert _lines(verbose) == [f"b/m.py  ({mono / 'b' / 'neuronize.toml'})",
                               f"b/pyproject.toml  ({mono / 'b' / 'neuronize.toml'})"]


def test_verbose_says_which_configuration_each_file_used(mono: Path) -> None:
    proc = neuronize("check", "-v", "--kinds", "python", ".", cwd=mono)
    err = proc.stderr.decode()
    for config in ("pyproject.toml", "a/pyproject.toml", "b/neuronize.toml"):
        assert f"neuronize: 1 file with settings from {mono / config}" in err


def test_resolver_reads_each_configuration_once(mono: Path) -> None:
    resolver = Resolver(Overrides(), cwd=mono)
    first = resolver.for_path(mono / "a" / "src" / "m.py")
    assert resolver.for_path(mono / "a" / "other.py") is first
    assert resolver.for_path(mono / "c" / "m.py").config.path == mono / "pyproject.toml"
    assert [s.config.path for s in resolver.used()] == [mono / "a" / "pyproject.toml",
                                                         mono / "pyproject.toml"]


def test_a_sub_projects_kinds_apply_inside_it_only(tmp_path: Path) -> None:
    """``extend-exclude-kinds`` in a sub-project's configuration leaves those kinds out there
    only; ``--kinds`` on the command line narrows every project."""
    (tmp_path / "pyproject.toml").write_text("[tool.neuronize]\n")
    (tmp_path / "svc").mkdir()
    (tmp_path / "svc" / "pyproject.toml").write_text('[tool.neuronize]\nextend-exclude-kinds = ["requirements", "pyproject"]\n')
    for folder in (tmp_path, tmp_path / "svc"):
        (folder / "requirements.txt").write_text("torch==2.13.0+cu121\n")
        (folder / "m.py").write_bytes(SCRIPT)
    listed = _lines(neuronize("check", "--show-files", ".", cwd=tmp_path))
    assert listed == ["m.py", "pyproject.toml", "requirements.txt", "svc/m.py"]
    shown = neuronize("check", "--show-settings", "svc/m.py", cwd=tmp_path).stdout.decode()
    assert '"requirements", "pyproject"' in shown.replace("[", "").replace("]", "")
    only = _lines(neuronize("check", "--show-files", "--kinds", "requirements", ".", cwd=tmp_path))
    assert only == ["requirements.txt"]
