"""Files are never damaged: bytes, modes, links and refusals, through the real command."""

from __future__ import annotations

import os
import stat

import pytest

from helpers import neuronize
from neuronize.sources.write import TEMP_SUFFIX, WriteRefused, write_atomic

#: the CPU target makes `.cuda()` a one-line edit: these tests are about the bytes around it
ONE_LINE = ("--target", "cpu")
FIXED_LINE = b'm = Net().to("cpu")'


@pytest.mark.parametrize(
    "before,after",
    [
        pytest.param(b"m = Net().cuda()\n", FIXED_LINE + b"\n", id="plain"),
        pytest.param(b"m = Net().cuda()", FIXED_LINE, id="no-final-newline"),
        pytest.param(b"import torch\r\nm = Net().cuda()\r\n", b"import torch\r\n" + FIXED_LINE + b"\r\n", id="crlf"),
        pytest.param(b"import torch\nx = 1\r\nm = Net().cuda()\n", b"import torch\nx = 1\r\n" + FIXED_LINE + b"\n",
                     id="mixed-newlines"),
        pytest.param(b"\xef\xbb\xbfm = Net().cuda()\n", b"\xef\xbb\xbf" + FIXED_LINE + b"\n", id="bom"),
        pytest.param(b"# -*- coding: latin-1 -*-\ns = '\xe9t\xe9'\nm = Net().cuda()\n",
                     # the file's strings are single-quoted: so is the one the fix adds
                     b"# -*- coding: latin-1 -*-\ns = '\xe9t\xe9'\n" + FIXED_LINE.replace(b'"', b"'") + b"\n",
                     id="latin-1-cookie"),
        pytest.param(b"def f():\n\tm = Net().cuda()  # tab-indented\n\treturn m\n",
                     b"def f():\n\t" + FIXED_LINE + b"  # tab-indented\n\treturn m\n", id="tabs"),
        pytest.param(b"m = Net().cuda()\n\n\n   \n", FIXED_LINE + b"\n\n\n   \n", id="trailing-blank-lines"),
    ],
)
def test_bytes_survive_a_fix(tmp_path, before, after):
    target = tmp_path / "a.py"
    target.write_bytes(before)
    proc = neuronize("fix", *ONE_LINE, str(target))
    assert proc.returncode == 0, proc.stderr
    assert target.read_bytes() == after


def test_unchanged_file_is_not_rewritten(tmp_path):
    target = tmp_path / "a.py"
    target.write_bytes(b"import torch\nx = torch.zeros(3, device=dev)  # cuda is mentioned\n")
    os.utime(target, ns=(1_000_000_000, 1_000_000_000))
    before = target.stat()
    assert neuronize("fix", *ONE_LINE, str(target)).returncode == 0
    after = target.stat()
    assert (after.st_mtime_ns, after.st_ino) == (before.st_mtime_ns, before.st_ino)


def test_mode_bits_are_kept(tmp_path):
    target = tmp_path / "run.py"
    target.write_bytes(b"m = Net().cuda()\n")
    target.chmod(0o754)
    assert neuronize("fix", *ONE_LINE, str(target)).returncode == 0
    assert stat.S_IMODE(target.stat().st_mode) == 0o754
    assert target.read_bytes() == FIXED_LINE + b"\n"


def test_read_only_file_is_refused(tmp_path):
    target = tmp_path / "ro.py"
    target.write_bytes(b"m = Net().cuda()\n")
    target.chmod(0o444)
    proc = neuronize("fix", *ONE_LINE, str(target))
    assert proc.returncode == 2
    assert b"read-only" in proc.stderr
    assert target.read_bytes() == b"m = Net().cuda()\n"


def test_file_changed_since_read_is_refused(tmp_path):
    target = tmp_path / "a.py"
    target.write_bytes(b"edited by someone else\n")
    with pytest.raises(WriteRefused, match="changed on disk"):
        write_atomic(target, b"m = Net().cuda()\n", FIXED_LINE + b"\n")
    assert target.read_bytes() == b"edited by someone else\n"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(TEMP_SUFFIX)]


def test_symlink_stays_a_link_and_its_target_is_written(tmp_path):
    real = tmp_path / "real.py"
    real.write_bytes(b"m = Net().cuda()\n")
    link = tmp_path / "link.py"
    link.symlink_to(real)
    assert neuronize("fix", *ONE_LINE, str(link)).returncode == 0
    assert link.is_symlink()
    assert real.read_bytes() == FIXED_LINE + b"\n"


def test_symlink_pointing_outside_the_given_tree_is_not_written(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "other.py"
    secret.write_bytes(b"m = Net().cuda()\n")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "link.py").symlink_to(secret)
    (tree / "own.py").write_bytes(b"m = Net().cuda()\n")
    proc = neuronize("fix", *ONE_LINE, str(tree))
    assert secret.read_bytes() == b"m = Net().cuda()\n"
    assert (tree / "own.py").read_bytes() == FIXED_LINE + b"\n"
    assert b"outside the given paths" in proc.stderr


def test_symlink_loop_and_py_directory(tmp_path):
    (tmp_path / "loop").symlink_to(tmp_path)
    (tmp_path / "pkg.py").mkdir()
    (tmp_path / "pkg.py" / "inner.py").write_bytes(b"m = Net().cuda()\n")
    proc = neuronize("fix", *ONE_LINE, str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "pkg.py" / "inner.py").read_bytes() == FIXED_LINE + b"\n"


def test_gitignore_and_virtualenvs_are_skipped(tmp_path):
    (tmp_path / ".gitignore").write_text("generated/\n*_gen.py\n")
    for rel in ("generated/a.py", "b_gen.py", ".venv/lib/c.py", "env/lib/d.py", "build/e.py",
                "site-packages/f.py", "keep.py"):
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"m = Net().cuda()\n")
    (tmp_path / "env" / "pyvenv.cfg").write_text("home = /usr\n")
    proc = neuronize("check", ".", cwd=tmp_path)
    paths = {line.split(":")[0] for line in proc.stdout.decode().splitlines()}
    assert paths == {"keep.py"}
    # A file named explicitly is processed even if ignored.
    assert b"b_gen.py:1" in neuronize("check", "b_gen.py", cwd=tmp_path).stdout


def test_path_given_twice_is_processed_once(tmp_path):
    target = tmp_path / "a.py"
    target.write_bytes(b"m = Net().cuda()\n")
    proc = neuronize("check", str(target), str(target), str(tmp_path))
    assert proc.stdout.decode().count("NRN102") == 1


def test_no_temp_files_left_behind(tmp_path):
    for i in range(5):
        (tmp_path / f"f{i}.py").write_bytes(b"m = Net().cuda()\n")
    assert neuronize("fix", *ONE_LINE, str(tmp_path)).returncode == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"f{i}.py" for i in range(5)]
