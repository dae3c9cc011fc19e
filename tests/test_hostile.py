"""Hostile inputs through the real command line: each gets a one-line outcome, no traceback, and
the rest of the run goes on (a good file beside it is still fixed). Cases already covered by
test_io.py (symlink outside the tree, directory symlink loop, ``pkg.py/`` directory walked, path
given twice to ``check``) are not repeated.

The inputs that could kill an interpreter (a huge file, deep nesting on the parser's C stack) run
in a process of their own; the others run the command line in this process."""

from __future__ import annotations

import os

import pytest

from helpers import neuronize, neuronize_process

GOOD = b"m = Net().cuda()\n"
#: the CPU target makes `.cuda()` a one-line edit: these tests are about the bytes around it
ONE_LINE = ("--target", "cpu")
FIXED = b'm = Net().to("cpu")\n'


def _run_with_good_file(tmp_path, *paths: str, process: bool = False):
    good = tmp_path / "good.py"
    good.write_bytes(GOOD)
    if process:
        proc = neuronize_process("fix", *ONE_LINE, *paths, str(good), timeout=600)
    else:
        proc = neuronize("fix", *ONE_LINE, *paths, str(good))
    stderr = proc.stderr.decode("utf-8", "replace")
    assert "Traceback" not in stderr, stderr
    assert good.read_bytes() == FIXED, stderr
    return proc, stderr


#: far beyond any hand-written module; the cost per byte is flat from here on (the size series of
#: benchmarks/bench.py shows it), so a larger file proves nothing more
BIG_FILE_BYTES = 2_000_000


@pytest.mark.slow
def test_very_large_file(tmp_path):
    big = tmp_path / "big.py"
    # A generated-looking module: mostly plain code, a device string every hundred lines.
    plain = b"weights_%d = [0.1, 0.2, 0.3, 0.4]  # " + b"y" * 50 + b"\n"
    cuda = b"x = torch.zeros(4, device='cuda')\n"
    block = b"".join(plain % i for i in range(99)) + cuda
    data = b"import torch\n" + block * (BIG_FILE_BYTES // len(block))
    big.write_bytes(data)
    proc, stderr = _run_with_good_file(tmp_path, str(big), process=True)
    assert proc.returncode in (0, 1), stderr
    out = big.read_bytes()
    assert out.count(b"device='cpu'") == data.count(b"device='cuda'")


# The sum nests deeper than CPython's default recursion limit (1000), which is what it proves;
# more terms prove nothing more and cost much more: libcst's parse time of a chain like this grows
# with about the cube of its length (500 terms 0.8 s, 1000 4 s, 2000 35 s; 5000 took 4 minutes).
@pytest.mark.slow
@pytest.mark.parametrize("body", [
    pytest.param("(" * 2000 + "x.cuda()" + ")" * 2000, id="2000-nested-parens"),
    pytest.param(" + ".join(["a"] * 1200) + " + x.cuda()", id="1200-term-sum"),
    pytest.param("[" * 300 + "x.cuda()" + "]" * 300, id="300-nested-lists"),
])
def test_deep_nesting(tmp_path, body):
    deep = tmp_path / "deep.py"
    source = f"import torch\ny = {body}\n".encode()
    deep.write_bytes(source)
    proc, stderr = _run_with_good_file(tmp_path, str(deep), process=True)
    now = deep.read_bytes()
    if now == source:  # left alone: then it must say so in one line, and exit 2
        assert proc.returncode == 2, stderr
        assert "deep.py" in stderr
    else:
        compile(now, "deep.py", "exec")


def test_nul_bytes(tmp_path):
    bad = tmp_path / "nul.py"
    bad.write_bytes(b"x = 1\x00\nm = Net().cuda()\n")
    proc, stderr = _run_with_good_file(tmp_path, str(bad))
    assert proc.returncode == 2
    assert [line for line in stderr.splitlines() if "nul.py" in line], stderr
    assert bad.read_bytes() == b"x = 1\x00\nm = Net().cuda()\n"


def test_unreadable_file(tmp_path):
    bad = tmp_path / "secret.py"
    bad.write_bytes(GOOD)
    bad.chmod(0)
    try:
        proc, stderr = _run_with_good_file(tmp_path, str(bad))
        if os.geteuid() == 0:  # root reads it anyway: processed like any other file
            assert proc.returncode in (0, 2), stderr
        else:
            assert proc.returncode == 2
            assert "secret.py" in stderr
            assert bad.stat().st_mode & 0o777 == 0
    finally:
        bad.chmod(0o644)


def test_file_symlink_loop(tmp_path):
    loop = tmp_path / "loop.py"
    loop.symlink_to(loop)
    proc, stderr = _run_with_good_file(tmp_path, str(loop))
    assert proc.returncode == 2, stderr
    assert "loop.py" in stderr
    assert loop.is_symlink()


def test_directory_symlink_loop_named_explicitly(tmp_path):
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "a.py").write_bytes(GOOD)
    (tmp_path / "tree" / "self").symlink_to(tmp_path / "tree")
    proc, stderr = _run_with_good_file(tmp_path, str(tmp_path / "tree"), str(tmp_path / "tree" / "self"))
    assert (tmp_path / "tree" / "a.py").read_bytes() == FIXED


def test_path_given_twice_to_fix(tmp_path):
    target = tmp_path / "a.py"
    target.write_bytes(GOOD)
    proc, stderr = _run_with_good_file(tmp_path, str(target), str(target), str(tmp_path))
    assert proc.returncode == 0, stderr
    assert target.read_bytes() == FIXED
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_py_directory_named_explicitly(tmp_path):
    pkg = tmp_path / "pkg.py"
    pkg.mkdir()
    (pkg / "inner.py").write_bytes(GOOD)
    proc, stderr = _run_with_good_file(tmp_path, str(pkg))
    assert proc.returncode == 0, stderr
    assert (pkg / "inner.py").read_bytes() == FIXED


def test_nothing_written_outside_the_given_paths(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "o.py").write_bytes(GOOD)
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "link_dir").symlink_to(outside)
    (tree / "link.py").symlink_to(outside / "o.py")
    (tree / "rel.py").symlink_to(os.path.join("..", "outside", "o.py"))
    before = {p: p.read_bytes() for p in outside.iterdir()}
    _run_with_good_file(tmp_path, str(tree))
    assert {p: p.read_bytes() for p in outside.iterdir()} == before
    assert sorted(p.name for p in outside.iterdir()) == ["o.py"]
