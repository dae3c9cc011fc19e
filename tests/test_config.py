"""[tool.neuronize] in pyproject.toml: finding it, reading it, refusing what it cannot mean."""

from __future__ import annotations

from pathlib import Path

import pytest

from neuronize.sources.config import Config, ConfigError, find_config, ignored_codes_for, load_config


def write(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "pyproject.toml"
    path.write_text(text, encoding="utf-8")
    return path


FULL = """
[project]
name = "demo"

[tool.neuronize]
select = ["NRN1", "nccl-backend"]
ignore = ["NRN102"]
unsafe-fixes = true
exclude = ["generated/", "*_pb2.py"]
extend-exclude = ["legacy/**"]
target = "accelerator"

[tool.neuronize.per-file-ignores]
"tests/**" = ["NRN101", "cuda-method"]
"__init__.py" = ["NRN9"]
"""


def test_full_table(tmp_path: Path) -> None:
    path = write(tmp_path, FULL)
    config = load_config(path)
    assert config == Config(
        path=path,
        select=("NRN1", "nccl-backend"),
        ignore=("NRN102",),
        unsafe_fixes=True,
        exclude=("generated/", "*_pb2.py"),
        extend_exclude=("legacy/**",),
        per_file_ignores={"tests/**": ("NRN101", "cuda-method"), "__init__.py": ("NRN9",)},
        target="accelerator",
    )
    assert config.root == tmp_path


def test_no_table_gives_defaults(tmp_path: Path) -> None:
    path = write(tmp_path, '[project]\nname = "x"\n')
    config = load_config(path)
    assert config == Config(path=path)
    assert config.select is None and config.unsafe_fixes is None and config.exclude is None


def test_empty_exclude_is_kept_apart_from_unset(tmp_path: Path) -> None:
    assert load_config(write(tmp_path, "[tool.neuronize]\nexclude = []\n")).exclude == ()


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('selekt = ["NRN1"]', "unknown key 'selekt' (did you mean 'select'?"),
        ("unsafe_fixes = true", "unknown key 'unsafe_fixes' (did you mean 'unsafe-fixes'?"),
        ('select = "NRN101"', "select: expected a list of strings, got a string"),
        ("select = [1]", "select: expected a list of non-empty strings, found 1"),
        ("select = []", "select: an empty list selects nothing"),
        ('ignore = ["NRN7"]', "ignore: 'NRN7' matches no rule"),
        ('ignore = ["not-a-rule"]', "ignore: 'not-a-rule' matches no rule"),
        ('unsafe-fixes = "yes"', "unsafe-fixes: expected true or false, got a string"),
        ('target = "gpu"', "target: expected one of 'neuron', 'accelerator', 'cpu', got 'gpu'"),
        ("target = 3", "target: expected one of"),
        ('exclude = "build"', "exclude: expected a list of strings"),
        ('extend-exclude = [""]', "extend-exclude: expected a list of non-empty strings"),
        ('per-file-ignores = ["tests/*"]', "per-file-ignores: expected a table"),
        ("per-file-ignores = { 'tests/*' = 'NRN101' }", "per-file-ignores.'tests/*': expected a list"),
        ("per-file-ignores = { 'tests/*' = ['NRN799'] }",
         "per-file-ignores.'tests/*': 'NRN799' matches no rule"),
    ],
)
def test_mistakes_are_one_line_errors_naming_file_and_key(tmp_path: Path, body: str,
                                                          expected: str) -> None:
    path = write(tmp_path, f"[tool.neuronize]\n{body}\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: [tool.neuronize] ")
    assert expected in message


def test_table_of_wrong_type(tmp_path: Path) -> None:
    path = write(tmp_path, "[tool]\nneuronize = 1\n")
    with pytest.raises(ConfigError, match=r"\[tool.neuronize\] must be a table"):
        load_config(path)


def test_codes_accept_ids_any_case_prefixes_and_names(tmp_path: Path) -> None:
    path = write(tmp_path, '[tool.neuronize]\nignore = ["nrn101", "NRN", "NRN40", "triton-kernel"]\n')
    assert load_config(path).ignore == ("nrn101", "NRN", "NRN40", "triton-kernel")


def test_invalid_toml_names_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, '[tool.neuronize]\nselect = ["NRN1"]\ntarget = \n')
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert message.startswith(f"{path}: invalid TOML")
    assert "line 3" in message and "\n" not in message


def test_unreadable_or_non_utf8(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.toml")
    bad = tmp_path / "pyproject.toml"
    bad.write_bytes(b'[tool.neuronize]\ntarget = "\xff"\n')
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_config(bad)


def test_loading_executes_nothing(tmp_path: Path) -> None:
    (tmp_path / "setup.py").write_text("raise SystemExit('executed')\n")
    (tmp_path / "conftest.py").write_text("raise SystemExit('executed')\n")
    assert load_config(write(tmp_path, "[tool.neuronize]\n")).path == tmp_path / "pyproject.toml"


# -- find_config -----------------------------------------------------------------------------------

def test_find_walks_up_past_pyprojects_without_the_table(tmp_path: Path) -> None:
    top = write(tmp_path, '[tool.neuronize]\ntarget = "cpu"\n')
    write(tmp_path / "pkg", '[project]\nname = "inner"\n[tool.ruff]\nline-length = 99\n')
    source = tmp_path / "pkg" / "sub" / "model.py"
    source.parent.mkdir(parents=True)
    source.write_text("x = 1\n")
    assert find_config(source) == top
    assert find_config(source.parent) == top
    assert find_config(tmp_path) == top


def test_find_prefers_the_nearest(tmp_path: Path) -> None:
    write(tmp_path, "[tool.neuronize]\n")
    inner = write(tmp_path / "pkg", "[tool.neuronize]\nunsafe-fixes = false\n")
    assert find_config(tmp_path / "pkg" / "a.py") == inner


def test_find_dotted_key_form(tmp_path: Path) -> None:
    path = write(tmp_path, 'tool.neuronize.target = "neuron"\n')
    assert find_config(tmp_path) == path
    assert load_config(path).target == "neuron"


def test_find_returns_broken_config_so_the_error_is_reported(tmp_path: Path) -> None:
    path = write(tmp_path, "[tool.neuronize]\nselect = [\n")
    assert find_config(tmp_path) == path
    with pytest.raises(ConfigError):
        load_config(path)


def test_find_skips_broken_unrelated_pyproject(tmp_path: Path) -> None:
    broken = write(tmp_path / "a", "[project\nname = 'neuronize-demo'\n")
    top = write(tmp_path, "[tool.neuronize]\n")
    assert find_config(broken) == top


def test_find_nothing(tmp_path: Path) -> None:
    write(tmp_path, '[project]\nname = "x"\n')
    found = find_config(tmp_path)
    # a [tool.neuronize] above tmp_path on this machine is possible but not ours
    assert found is None or not str(found).startswith(str(tmp_path))


# -- per-file-ignores ----------------------------------------------------------------------------

def per_file(**globs: tuple[str, ...]) -> Config:
    return Config(per_file_ignores=dict(globs))


@pytest.mark.parametrize(
    ("glob", "path", "hit"),
    [
        ("tests/**", "tests/test_a.py", True),
        ("tests/**", "tests/unit/deep/test_a.py", True),
        ("tests/**", "src/tests.py", False),
        ("tests/*", "tests/unit/test_a.py", True),  # fnmatch: * crosses /
        ("**/conftest.py", "conftest.py", True),  # **/ may match no folder
        ("**/conftest.py", "a/b/conftest.py", True),
        ("__init__.py", "pkg/sub/__init__.py", True),  # no / -> the bare name, anywhere
        ("src/__init__.py", "pkg/src/__init__.py", False),  # with / -> from the config's folder
        ("*_pb2.py", "proto/x_pb2.py", True),
        ("test_?.py", "test_a.py", True),
        ("test_[ab].py", "test_b.py", True),
        ("test_[!ab].py", "test_b.py", False),
        ("Tests/**", "tests/a.py", False),  # case-sensitive everywhere
        ("./scripts/*.py", "scripts/run.py", True),
    ],
)
def test_ignored_codes_globs(glob: str, path: str, hit: bool) -> None:
    assert ignored_codes_for(per_file(**{glob: ("NRN101",)}), path) == (("NRN101",) if hit else ())


def test_ignored_codes_normalise_the_path_and_merge_in_order() -> None:
    config = Config(per_file_ignores={
        "tests/**": ("NRN101", "cuda-method"),
        "**/test_*.py": ("NRN9", "NRN101"),
        "docs/**": ("NRN4",),
    })
    assert ignored_codes_for(config, "./tests\\unit\\test_x.py") == ("NRN101", "cuda-method", "NRN9")
    assert ignored_codes_for(config, "src/model.py") == ()


def test_ignored_codes_from_a_loaded_file(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, FULL))
    assert ignored_codes_for(config, "tests/test_a.py") == ("NRN101", "cuda-method")
    assert ignored_codes_for(config, "pkg/__init__.py") == ("NRN9",)
