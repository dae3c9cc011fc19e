"""Execution proof of ``--target cpu`` and ``--target accelerator`` (issue 8).

Each whole-script fixture of fixtures/pipeline/ is rewritten with the real command line
(``python -m neuronize fix --unsafe-fixes --target T``) into a temporary directory and run on this
machine's CPU build of PyTorch for a few steps on tiny sizes. Every run must finish with finite
losses; where the original script itself runs on CPU (it falls back to the CPU when no GPU is
present), the rewritten scripts' losses must match the original's CPU run within
``RTOL``/``ATOL`` (the printed losses are rounded to 4-6 decimals; the same float32 math runs).

The default run leaves these tests out (pyproject.toml's addopts); run them with ``-m execution``
(the second step of .ci/run). They are skipped when ``import torch`` fails (``pip install -e '.[test]'`` installs the CPU build).
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="execution tests need PyTorch (pip install -e '.[test]')")

pytestmark = pytest.mark.execution

PIPELINE = Path(__file__).resolve().parent.parent / "fixtures" / "pipeline"
TARGETS = ("cpu", "accelerator")
#: tolerance of the loss comparison with the original's CPU run
RTOL, ATOL = 1e-4, 2e-4
LOSS = re.compile(r"loss (-?[0-9.]+(?:e-?\d+)?|nan|inf)")

#: fixtures that cannot run on this machine's CPU at all, with why
CANNOT_RUN = {
    "hf_finetune": "downloads a Hugging Face model and data set at run time (no network here)",
    "hf_generate": "downloads a Hugging Face model at run time (no network here)",
    "custom_kernels": "builds a CUDA C++ extension and captures CUDA graphs (needs nvcc and a GPU)",
}


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("RANK", None)  # the GPT trainer decides single-process vs DDP from RANK
    env.update(OMP_NUM_THREADS="1", PYTHONHASHSEED="0", CUDA_VISIBLE_DEVICES="")
    return env


def rewrite(name: str, target: str, tmp: Path) -> Path:
    """The pipeline script ``name`` rewritten for ``target`` by the real command line."""
    dest = tmp / target / f"{name}.py"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes((PIPELINE / f"{name}.before.py").read_bytes())
    done = subprocess.run(
        [sys.executable, "-m", "neuronize", "fix", "--unsafe-fixes", "--quiet", "--target", target, str(dest)],
        capture_output=True, text=True, env=_env(), timeout=120,
    )
    assert done.returncode in (0, 1), done.stderr
    assert dest.read_bytes() != (PIPELINE / f"{name}.before.py").read_bytes(), "nothing was rewritten"
    return dest


GLOO_TEARDOWN_ABORT = "terminate called without an active exception"


def run(script: Path, *args: str, launcher: tuple[str, ...] = (), timeout: int = 240) -> list[float]:
    done = subprocess.run(
        [sys.executable, *launcher, str(script), *args],
        capture_output=True, text=True, cwd=script.parent, env=_env(), timeout=timeout,
    )
    losses = [float(x) for x in LOSS.findall(done.stdout)]
    if done.returncode != 0 and launcher and losses and GLOO_TEARDOWN_ABORT in done.stderr:
        # torch 2.13's gloo process group sometimes aborts at interpreter exit, after
        # destroy_process_group() and after every step ran ("terminate called without an active
        # exception" from a joinable background thread): a PyTorch teardown issue, not the script's.
        pass
    else:
        assert done.returncode == 0, f"{script} failed:\n{done.stdout}\n{done.stderr[-4000:]}"
    assert losses, f"{script} printed no loss:\n{done.stdout}"
    assert all(math.isfinite(x) for x in losses), losses
    return losses


def assert_close(got: list[float], expected: list[float]) -> None:
    assert len(got) == len(expected), (got, expected)
    for g, e in zip(got, expected):
        assert math.isclose(g, e, rel_tol=RTOL, abs_tol=ATOL), (got, expected)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("execution")


# -- GPT trainer: GradScaler, autocast, compile, DDP switches ---------------------------------------
@pytest.fixture(scope="module")
def gpt_original(workdir):
    script = workdir / "original" / "gpt_trainer.py"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_bytes((PIPELINE / "gpt_trainer.before.py").read_bytes())
    return run(script, "--max-iters", "4", "--no-compile")


@pytest.mark.parametrize("target", TARGETS)
def test_gpt_trainer(target, workdir, gpt_original):
    script = rewrite("gpt_trainer", target, workdir)
    assert_close(run(script, "--max-iters", "4", "--no-compile"), gpt_original)


def test_gpt_trainer_compiled(workdir, gpt_original):
    """One run with ``torch.compile`` on (Inductor on the CPU): the compiled model matches too."""
    script = rewrite("gpt_trainer", "cpu", workdir / "compiled")
    assert_close(run(script, "--max-iters", "4", timeout=400), gpt_original)


# -- a small inference script: the is_available idiom, autocast, synchronize, inference_mode --------
@pytest.fixture(scope="module")
def inference_original(workdir):
    script = workdir / "original" / "tiny_inference.py"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_bytes((PIPELINE / "tiny_inference.before.py").read_bytes())
    return run(script, "--batches", "3")


@pytest.mark.parametrize("target", TARGETS)
def test_tiny_inference(target, workdir, inference_original):
    script = rewrite("tiny_inference", target, workdir)
    assert_close(run(script, "--batches", "3"), inference_original)


# -- FSDP2 worker under torchrun, 2 processes ------------------------------------------------------
@pytest.fixture(scope="module")
def fsdp_losses(workdir):
    """The original hard-codes NCCL and "cuda" (no CPU fallback), so it cannot run here: the two
    rewritten versions must run on gloo and agree with each other."""
    launcher = ("-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2")
    return {t: run(rewrite("fsdp_worker", t, workdir), launcher=launcher) for t in TARGETS}


def test_fsdp_worker_original_cannot_run_on_cpu():
    source = (PIPELINE / "fsdp_worker.before.py").read_text()
    assert 'init_process_group("nccl")' in source and 'device="cuda"' in source


@pytest.mark.parametrize("target", TARGETS)
def test_fsdp_worker(target, fsdp_losses):
    assert len(fsdp_losses[target]) == 3
    assert_close(fsdp_losses[target], fsdp_losses["cpu"])


def test_fsdp_worker_cpu_uses_gloo(workdir):
    cpu = rewrite("fsdp_worker", "cpu", workdir / "check").read_text()
    accel = rewrite("fsdp_worker", "accelerator", workdir / "check").read_text()
    assert 'init_process_group("gloo")' in cpu
    assert "get_default_backend_for_device(" in accel


# -- what cannot run here -----------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(CANNOT_RUN))
def test_cannot_run_on_cpu(name):
    pytest.skip(f"{name}: {CANNOT_RUN[name]}")


def test_every_whole_script_fixture_exists():
    for name in ("gpt_trainer", "tiny_inference", "fsdp_worker", *CANNOT_RUN):
        assert (PIPELINE / f"{name}.before.py").is_file(), name
