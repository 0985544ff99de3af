"""The router suite's teardown: every router the tests start names the EAL
prefix harness.EAL_PREFIX (this test process's own), and DPDK leaves a
runtime folder of that name behind (even with --no-shconf); it goes when the
suite ends."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness import EAL_PREFIX


@pytest.fixture(scope="session", autouse=True)
def remove_eal_runtime_folder():
    yield
    shutil.rmtree(Path("/var/run/dpdk") / EAL_PREFIX, ignore_errors=True)
