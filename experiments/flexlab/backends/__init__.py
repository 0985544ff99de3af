"""Endpoint backends: where the experiment's hosts live and how their real
packets are held for the emulator. One experiment format, one emulator, one
protocol; backends differ only in what a host is (`netns`: a network
namespace with the NFQUEUE endpoint; `qemu`: a VM with the flexplane qdisc;
`hosts`: a real machine reached over SSH, with the flexplane qdisc)."""
from __future__ import annotations

from flexlab.backends.base import Backend
from flexlab.backends.hosts import HostsBackend
from flexlab.backends.netns import NetnsBackend
from flexlab.backends.qemu import QemuBackend

BACKENDS: dict[str, type[Backend]] = {"netns": NetnsBackend, "qemu": QemuBackend,
                                     "hosts": HostsBackend}


def backend_class(name: str) -> type[Backend]:
    return BACKENDS[name]
