"""The qemu backend: hosts are QEMU/TCG VMs running Debian's kernel with the
`flexplane` qdisc (kmod/, issue #9), on taps bridged with the emulator's port.

Not available yet: the kernel module is being built (branch kmod). The seam
is the Backend interface; this class reports clearly that it cannot run, and
experiment files naming it are refused before anything starts.
"""
from __future__ import annotations

from pathlib import Path

from flexlab.backends.base import Backend, LabSettings
from flexlab.errors import LabError
from flexlab.procs import Proc

NOT_YET = ("backend 'qemu' is not available yet: it needs the flexplane qdisc kernel module "
           "(issue #9, in progress); use backend: netns (DCTCP, which needs the guest kernel, waits for it too)")


class QemuBackend(Backend):
    name = "qemu"

    @classmethod
    def problems(cls) -> list[str]:
        return [NOT_YET]

    def up(self, s: LabSettings) -> None:
        raise LabError(NOT_YET)

    def down(self) -> None:
        pass

    def start_emulator(self, argv: list[str], eal: list[str], log: Path) -> Proc:
        raise LabError(NOT_YET)

    def start_endpoints(self, config: Path, out_dir: Path, s: LabSettings) -> list[Proc]:
        raise LabError(NOT_YET)

    def run_on_host(self, host: int, name: str, argv: list[str], log: Path) -> Proc:
        raise LabError(NOT_YET)

    @classmethod
    def cleanup(cls, prefix: str) -> list[str]:
        return []
