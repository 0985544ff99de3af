"""Fixtures for the live integration tests (run as root:
/work/main/.venv/bin/python -m pytest tests/integration). A missing
prerequisite FAILS the test with the reason: CI runs as root and must not
silently skip."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from live_harness import LiveRun, find_bin_dir  # noqa: E402
from netns import LiveNet, missing_prerequisites  # noqa: E402

_counter = [0]


@pytest.fixture
def bin_dir() -> Path:
    problems = missing_prerequisites(need_nft=True)
    d = find_bin_dir()
    if d is None:
        problems.append("no build folder with flexplane-emulator and flexplane-endpoint "
                        "(build them, or set FLEXPLANE_BIN_DIR)")
    if problems:
        pytest.fail("live integration tests cannot run: " + "; ".join(problems))
    return d


@pytest.fixture
def live_net(bin_dir):
    """A fresh 4-endpoint topology; deleted afterwards, also on failure."""
    _counter[0] += 1
    net = LiveNet(4, prefix=f"fp{os.getpid() % 10000}t{_counter[0]}")
    with net:
        yield net


@pytest.fixture
def live_run(live_net, bin_dir, tmp_path):
    run = LiveRun(live_net, bin_dir, tmp_path)
    try:
        yield run
    finally:
        run.cleanup()
