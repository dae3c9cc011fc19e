"""A generated corpus of realistic files through the real command line (issue 7).

No crash, every output parses, a second run changes nothing, and files the pre-filter rules out
keep their bytes and their modification time.
"""

from __future__ import annotations

import ast
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus_gen import generate_corpus  # noqa: E402
from helpers import neuronize  # noqa: E402

from neuronize.analysis.prefilter import prefilter_for  # noqa: E402
from neuronize.registry import all_rules  # noqa: E402

N_FILES = 150
TARGET_BYTES = 500_000  # about 3 KB a file keeps the test near 20 s on two cores


def _snapshot(paths: list[Path]) -> dict[Path, tuple[bytes, int]]:
    return {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in paths}


def _errors(stderr: bytes) -> list[str]:
    return [line for line in stderr.decode(errors="replace").splitlines() if "error:" in line]


def test_generator_is_deterministic(tmp_path):
    a = generate_corpus(tmp_path / "a", 30, seed=7)
    b = generate_corpus(tmp_path / "b", 30, seed=7)
    c = generate_corpus(tmp_path / "c", 30, seed=8)
    assert [p.relative_to(tmp_path / "a") for p in a] == [p.relative_to(tmp_path / "b") for p in b]
    assert [p.read_bytes() for p in a] == [p.read_bytes() for p in b]
    assert [p.read_bytes() for p in a] != [p.read_bytes() for p in c]


def test_generator_target_bytes(tmp_path):
    paths = generate_corpus(tmp_path, 40, seed=3, target_bytes=800_000)
    total = sum(p.stat().st_size for p in paths)
    assert 500_000 < total < 1_300_000, total


@pytest.mark.slow
def test_generated_corpus_through_fix(tmp_path):
    root = tmp_path / "corpus"
    paths = generate_corpus(root, N_FILES, seed=2024, target_bytes=TARGET_BYTES)
    assert len(paths) == N_FILES
    for p in paths:  # the generator itself writes valid Python
        compile(p.read_bytes(), str(p), "exec", dont_inherit=True)
    prefilter = prefilter_for(all_rules())
    untouched = [p for p in paths if not prefilter.search(p.read_bytes())]
    assert untouched, "the corpus should hold files with no pre-filter token"
    variety = b"".join(p.read_bytes()[:4] for p in paths)
    assert b"\xef\xbb\xbf" in variety
    before = _snapshot(paths)
    os.utime(root, None)

    first = neuronize("fix", "--unsafe-fixes", str(root))
    assert first.returncode in (0, 1), first.stderr.decode(errors="replace")[-3000:]
    assert not _errors(first.stderr), _errors(first.stderr)[:20]
    after_first = _snapshot(paths)
    changed = [p for p in paths if after_first[p][0] != before[p][0]]
    assert changed, "a corpus full of CUDA code should get edits"
    for p in paths:
        ast.parse(after_first[p][0], filename=str(p))

    second = neuronize("fix", "--unsafe-fixes", str(root))
    assert second.returncode in (0, 1), second.stderr.decode(errors="replace")[-3000:]
    assert not _errors(second.stderr), _errors(second.stderr)[:20]
    after_second = _snapshot(paths)
    not_idempotent = [str(p.relative_to(root)) for p in paths
                      if after_second[p][0] != after_first[p][0]]
    assert not not_idempotent, not_idempotent

    for p in untouched:
        assert after_second[p] == before[p], f"{p} has no pre-filter token but was rewritten"
    # files with nothing to change keep their bytes and mtime as well
    for p in paths:
        if after_first[p][0] == before[p][0]:
            assert after_second[p][1] == before[p][1], f"{p} was rewritten with the same bytes"
