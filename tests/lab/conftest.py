"""Fixtures for the lab tests (run as root: .venv/bin/python -m pytest tests/lab).
A missing prerequisite FAILS the test with the reason: CI runs as root and
must not silently skip. Every namespace a test creates carries a per-test
prefix and is removed afterwards, also on failure."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "experiments"))
sys.path.insert(0, str(HERE))

from flexlab.backends.netns import NetnsBackend  # noqa: E402

_counter = [0]


def bin_dir() -> Path:
    return Path(os.environ.get("FLEXPLANE_BIN_DIR", REPO / "build"))


@pytest.fixture
def lab_bins() -> Path:
    problems = NetnsBackend.problems()
    d = bin_dir()
    for prog in ("flexplane-emulator", "flexplane-nfq-endpoint", "flexplane-workload"):
        if not (d / prog).exists():
            problems.append(f"{d / prog} not built (make build, or set FLEXPLANE_BIN_DIR)")
    if problems:
        pytest.fail("lab tests cannot run: " + "; ".join(problems))
    return d


@pytest.fixture
def prefix() -> str:
    """A namespace-name prefix unique to this test (and process)."""
    _counter[0] += 1
    return f"fplt{os.getpid() % 10000}x{_counter[0]}"
