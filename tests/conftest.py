from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture(scope="session", autouse=True)
def _private_result_cache(tmp_path_factory):
    """Every neuronize the tests start uses a cache of the test session's own."""
    import os

    os.environ["NEURONIZE_CACHE_DIR"] = str(tmp_path_factory.mktemp("neuronize-cache"))
