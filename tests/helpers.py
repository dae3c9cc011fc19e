"""Running the real command line the way a user does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def neuronize(*args: str, cwd: Path | None = None, stdin: bytes | None = None,
              env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
    full_env = {**os.environ, "NO_COLOR": "1", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "neuronize", *args],
        cwd=cwd, input=stdin, capture_output=True, env=full_env, timeout=timeout,
    )
