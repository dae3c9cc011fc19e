"""The result cache: keys miss on every change that can change a result; entries round-trip."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import neuronize
from neuronize.sources.cache import ResultCache, code_fingerprint, default_directory
from neuronize.analysis.context import Options
from neuronize.analysis.engine import run_source
from neuronize.types import FileError, SourceResult
from neuronize.registry import all_rules
from neuronize.transform import Finding, Safety

SOURCE = b'import torch\nmodel = Net().cuda()\ndevice = "cuda"\n'
IDS = [r.id for r in all_rules()]


@pytest.fixture
def cache(tmp_path: Path) -> ResultCache:
    return ResultCache(tmp_path / "cache")


def test_same_inputs_same_key(cache):
    k1 = cache.key(SOURCE, IDS, Options(), fix=False)
    k2 = cache.key(SOURCE, list(reversed(IDS)), Options(), fix=False)
    assert k1 == k2 and len(k1) == 64
    assert ResultCache(cache.directory).key(SOURCE, IDS, Options(), False) == k1


def test_content_change_misses(cache):
    result = run_source(SOURCE, all_rules(), Options(), fix=False)
    cache.put(cache.key(SOURCE, IDS, Options(), False), result)
    assert cache.get(cache.key(SOURCE + b"\n", IDS, Options(), False)) is None
    assert cache.get(cache.key(SOURCE.replace(b"cuda", b"cudb"), IDS, Options(), False)) is None
    assert cache.get(cache.key(SOURCE, IDS, Options(), False)) == result


def test_rule_selection_misses(cache):
    key = cache.key(SOURCE, IDS, Options(), False)
    cache.put(key, SourceResult())
    assert cache.key(SOURCE, IDS[1:], Options(), False) != key
    assert cache.key(SOURCE, ["NRN102"], Options(), False) != key
    assert cache.get(cache.key(SOURCE, IDS[:-1], Options(), False)) is None


def test_options_and_mode_miss(cache):
    key = cache.key(SOURCE, IDS, Options(), False)
    cache.put(key, SourceResult())
    others = {
        cache.key(SOURCE, IDS, Options(unsafe_fixes=True), False),
        cache.key(SOURCE, IDS, Options(target="cpu"), False),
        cache.key(SOURCE, IDS, Options(), True),
    }
    assert key not in others and len(others) == 3
    for other in others:
        assert cache.get(other) is None


def test_version_change_misses(cache, monkeypatch):
    key = cache.key(SOURCE, IDS, Options(), False)
    cache.put(key, SourceResult())
    monkeypatch.setattr(neuronize, "__version__", neuronize.__version__ + ".post1")
    new_key = cache.key(SOURCE, IDS, Options(), False)
    assert new_key != key
    assert cache.get(new_key) is None


def test_rule_source_change_misses(tmp_path):
    rules = tmp_path / "rules"
    rules.mkdir()
    rule = rules / "my_rule.py"
    rule.write_text("TOKENS = ('cuda',)\n")
    before = code_fingerprint([rule])
    rule.write_text("TOKENS = ('cuda', 'nccl')\n")
    after = code_fingerprint([rule])
    assert before != after
    a = ResultCache(tmp_path / "c", fingerprint=before)
    b = ResultCache(tmp_path / "c", fingerprint=after)
    a.put(a.key(SOURCE, IDS, Options(), False), SourceResult())
    assert b.get(b.key(SOURCE, IDS, Options(), False)) is None
    assert a.get(a.key(SOURCE, IDS, Options(), False)) == SourceResult()


def test_default_fingerprint_covers_rule_modules():
    import neuronize.transforms as transforms

    files = [p for folder in transforms.__path__ for p in Path(folder).glob("*.py")]
    assert files
    assert code_fingerprint() == code_fingerprint()
    assert code_fingerprint() != code_fingerprint(files[:-1])


def test_default_fingerprint_covers_the_stage_modules_and_the_family_rules():
    from neuronize.sources.cache import _rule_source_files

    files = {path.resolve() for path in _rule_source_files()}
    package = Path(neuronize.__file__).resolve().parent
    for module in ("analysis/engine.py", "decision/policy.py", "writing/wrapped.py", "types.py"):
        assert package / module in files, module
    for rule in all_rules():
        assert Path(sys.modules[rule.__module__].__file__).resolve() in files, rule.id


@pytest.mark.parametrize("fix", [False, True])
def test_hit_returns_equal_result(cache, fix):
    result = run_source(SOURCE, all_rules(), Options(unsafe_fixes=True), fix=fix)
    assert result.findings
    if fix:
        assert result.output is not None
    key = cache.key(SOURCE, IDS, Options(unsafe_fixes=True), fix)
    assert cache.put(key, result)
    again = ResultCache(cache.directory).get(key)
    assert again == result
    assert all(isinstance(f.safety, Safety) for f in again.findings)


def test_error_skipped_warnings_round_trip(cache):
    results = [
        SourceResult(error=FileError("syntax error: bad", 3, 7)),
        SourceResult(error=FileError("binary file")),
        SourceResult(skipped=True),
        SourceResult(
            findings=(Finding(line=1, column=1, rule="NRN102", name="cuda-method", safety=Safety.SAFE,
                              message="m", fixable=True, end_line=1, end_column=9, applied=True),),
            output=b"\xef\xbb\xbfx = 1\r\n\xe9\x00", warnings=("w1", "w2")),
    ]
    for i, result in enumerate(results):
        key = cache.key(bytes([i]), IDS, Options(), True)
        cache.put(key, result)
        assert cache.get(key) == result


def test_corrupt_entry_misses(cache):
    key = cache.key(SOURCE, IDS, Options(), False)
    result = run_source(SOURCE, all_rules(), Options(), fix=False)
    cache.put(key, result)
    path = next((cache.directory).rglob(f"{key}.json"))
    good = path.read_bytes()
    bad_entries = [
        b"", b"{", b"\x00\xff", b"[]", b'{"key": "x"}',
        good.replace(b'"safety":"', b'"safety":"nonsense', 1),
        json.dumps({"key": key, "result": {"findings": [1]}}).encode(),
        good[: len(good) // 2],
    ]
    for bad in bad_entries:
        path.write_bytes(bad)
        assert cache.get(key) is None, bad
    path.unlink()
    path.mkdir()  # even a directory where the entry should be
    assert cache.get(key) is None


def test_unwritable_directory_does_not_raise(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    cache = ResultCache(blocker / "cache")
    key = cache.key(SOURCE, IDS, Options(), False)
    assert cache.put(key, SourceResult()) is False
    assert cache.get(key) is None


def test_directory_is_git_ignored(cache):
    cache.put(cache.key(SOURCE, IDS, Options(), False), SourceResult())
    assert (cache.directory / ".gitignore").read_text().splitlines()[-1] == "*"
    assert not list(cache.directory.rglob(".tmp-*"))


def test_default_directory(monkeypatch, tmp_path):
    monkeypatch.delenv("NEURONIZE_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_directory() == tmp_path / "xdg" / "neuronize"
    monkeypatch.setenv("NEURONIZE_CACHE_DIR", str(tmp_path / "mine"))
    assert default_directory() == tmp_path / "mine"
    assert ResultCache().directory == tmp_path / "mine"


def test_the_rule_index_round_trips_and_a_damaged_one_is_rebuilt(tmp_path, monkeypatch):
    from neuronize import rule_index
    from neuronize.registry import all_rules

    infos = tuple(rule_index.RuleInfo.of(r) for r in all_rules())
    assert rule_index._decoded(rule_index._encoded(infos)) == infos
    assert rule_index._decoded(b'[{"id": "NRN101"}]') is None and rule_index._decoded(None) is None
    store = ResultCache(tmp_path, fingerprint="f" * 64)
    monkeypatch.setattr(rule_index, "_CATALOGUE", None)
    assert rule_index.catalogue(store) == infos  # built by importing the rules, then stored
    (stored,) = (tmp_path / "v1").glob("rules-*.json")
    stored.write_bytes(b"not json")
    monkeypatch.setattr(rule_index, "_CATALOGUE", None)
    assert rule_index.catalogue(store) == infos and rule_index._decoded(stored.read_bytes()) == infos



PROJECT = {
    "pkg/__init__.py": b"",
    "pkg/ops.py": b"import torch\nimport triton\n",
    "pkg/layers.py": b"import torch\n\n\ndef place(x):\n    return x.cuda()\n",
    "pkg/fused.py": b"import torch\nimport fastop\nbuf = torch.zeros(2).cuda()\n",
    "train.py": b"import torch\nfrom pkg.ops import run\nfrom pkg import layers\nnet = torch.nn.Linear(2, 2).cuda()\n",
    "serve.py": b"import torch\nfrom pkg import layers\n",
    "pkg/restore.py": b"import torch\n\n\ndef restore(model, path):\n    model.load_state_dict(torch.load(path))\n",
    "setup.py": b"from setuptools import setup\nsetup()\n",
}
#: one file's edit at a time, each changing what is reported about another file: the kernel import
#: goes (the same size), a script starts checking for a host (every file keeps its CUDA hosts on the
#: neuron target, so what that changes is `pkg/restore.py`'s checkpoint load, which names no CUDA: it
#: gains `map_location="cpu"` once the project chooses among hosts), the build script declares the
#: CUDA extension a module imports
EDITS = [
    ("pkg/ops.py", b"import triton", b"import tritom"),
    ("serve.py", b"import torch\n", b"import torch\nok = torch.cuda.is_available()\n"),
    ("setup.py", b"setup()", b"setup(ext_modules=[CUDAExtension(name='fastop')])"),
]


def _write_project(root: Path) -> None:
    for path, data in PROJECT.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)


@pytest.mark.parametrize("name, old, new", EDITS)
def test_a_changed_file_changes_the_project_facts_a_cached_run_uses(tmp_path, name, old, new):
    import os

    from helpers import neuronize as run_cli

    root = tmp_path / "project"
    _write_project(root)
    env = {"NEURONIZE_CACHE_DIR": str(tmp_path / "cache")}
    args = ("check", "--output-format", "json", str(root))
    before = run_cli(*args, env=env)
    assert run_cli(*args, env=env).stdout == before.stdout
    assert list((tmp_path / "cache").rglob("facts/*.json"))  # the second run read them from there
    edited = root / name
    stat = edited.stat()
    edited.write_bytes(edited.read_bytes().replace(old, new))
    os.utime(edited, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # only the bytes tell
    cached = run_cli(*args, env=env)
    uncached = run_cli("check", "--no-cache", "--output-format", "json", str(root))
    assert cached.stdout == uncached.stdout and cached.returncode == uncached.returncode

    def elsewhere(out: bytes) -> list[dict[str, object]]:
        return [f for f in json.loads(out)["findings"] if not str(f["path"]).endswith(name)]

    assert elsewhere(cached.stdout) != elsewhere(before.stdout)  # the edit changed another file's result


def test_damaged_project_facts_are_read_again(tmp_path):
    from neuronize.analysis.project_facts import ProjectFacts, project_facts
    from neuronize.sources.discover import Discovered

    _write_project(tmp_path)
    files = [Discovered(tmp_path / p, p, False) for p in PROJECT]
    store = ResultCache(tmp_path / "cache", fingerprint="f" * 64)
    uncached = project_facts(files)
    assert uncached != ProjectFacts() and project_facts(files, store) == uncached
    (stored,) = (tmp_path / "cache").rglob("facts/*.json")
    assert project_facts(files, store) == uncached
    for damage in (b"not json", b"{}", b'{"kernels": [[99, "x"]], "checks_host": false, "extensions": []}',
                   b'{"kernels": [], "checks_host": 1, "extensions": []}'):
        stored.write_bytes(damage)
        assert project_facts(files, store) == uncached


def test_the_options_key_is_the_same_in_every_process():
    # a set among the options (the project's probe flags, its model loaders) is spelled in one
    # order: its own follows string hashing, which each process seeds anew
    script = ("from neuronize.sources.cache import _options_text; from neuronize.types import Options; "
              "print(_options_text(Options(placed_loaders=frozenset(f'pkg.m{i}.load' for i in range(9)))))")
    spelled = {subprocess.run([sys.executable, "-c", script], capture_output=True, check=True,
                              env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout for seed in (1, 2, 3)}
    assert len(spelled) == 1
