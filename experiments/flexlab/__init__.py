"""flexplane lab: real applications on real TCP through the emulator.

One command runs an experiment file (docs/lab.md): it brings up the
endpoints (network namespaces today, QEMU VMs once the kernel module lands),
starts `flexplane-emulator live` and one endpoint program per host, runs the
workload, collects FCTs, throughput and the emulator's queue occupancy, and
tears everything down again.
"""
