"""One lab of three endpoint VMs for the whole session (kmod/vm/run.sh builds
what it needs and sets the paths below)."""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from vmlab import Lab  # noqa: E402


def _path(var: str) -> Path:
    value = os.environ.get(var)
    if not value:
        pytest.fail(f"{var} is not set: run kmod/vm/run.sh", pytrace=False)
    return Path(value)


class Results:
    """Figures the tests measure, written to results.json for docs/performance.md."""

    def __init__(self, path: Path):
        self.path, self.data = path, {}

    def put(self, key: str, value) -> None:
        self.data[key] = value
        self.path.write_text(json.dumps(self.data, indent=2, sort_keys=True))


@pytest.fixture(scope="session")
def lab():
    vm = _path("FLEXPLANE_KMOD_VM")
    kver = os.environ.get("FLEXPLANE_KMOD_KVER") or pytest.fail("FLEXPLANE_KMOD_KVER is not set", pytrace=False)
    kernel = vm / f"linux-image-{kver}" / "boot" / f"vmlinuz-{kver}"
    # Namespace / tap names fpx<pid>...: apart from the lab backend's and other suites' labs.
    lab = Lab(vm / "run", kernel, vm / "initramfs.cpio.gz", _path("FLEXPLANE_BIN_DIR") / "flexplane-emulator",
              prefix=f"fpx{os.getpid() % 100000}")
    lab.results = Results(vm / "run" / "results.json")
    t0 = time.time()
    try:
        lab.up()
        lab.results.put("boot_s", round(time.time() - t0, 1))
        yield lab
        lab.results.put("emulator_ready_s", lab.emulator.ready_s)
    finally:
        lab.down()
