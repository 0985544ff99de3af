"""Bad experiment files are refused before anything starts, with an error
that names the file and the field (exit status 2)."""
from __future__ import annotations

import pytest

from lab_cli import lab, namespaces

GOOD = {
    "topology": "{kind: single_rack, endpoints: 3}",
    "network": "{link_rate_gbps: 0.05}",
    "workload": "{kind: bulk, senders: [1, 2], receiver: 0}",
    "duration_s": "5",
}


def experiment(tmp_path, **override) -> str:
    fields = {**GOOD, **override}
    text = "".join(f"{k}: {v}\n" for k, v in fields.items() if v is not None)
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    return str(path)


CASES = [
    ({"transport": "{ccc: cubic}"}, "transport.ccc: unknown key"),
    ({"duration_s": '"ten"'}, "duration_s: expected a number"),
    ({"duration_s": "0"}, "duration_s: 0.0 is below the minimum"),
    ({"network": None}, "network.link_rate_gbps: required"),
    ({"workload": "{senders: [1], receiver: 0}"}, "workload.kind: required"),
    ({"workload": "{kind: bulk, senders: [1]}"}, "workload.receiver: required for workload kind 'bulk'"),
    ({"workload": "{kind: rpc, clients: [0], servers: [1], sizes: 'mix:1500@0.5'}"}, "workload.sizes: mix probabilities sum to 0.5"),
    ({"workload": "{kind: bulk, senders: [1, 7], receiver: 0}"}, "workload.senders: host 7 does not exist (the topology has 3 endpoints)"),
    ({"transport": "{cc: dctcp}"}, "transport.cc: 'dctcp' is not available on backend netns"),
    ({"backend": "qemu", "transport": "{cc: vegas}"}, "transport.cc: 'vegas' is not available on backend qemu"),
    ({"backend": "qemu", "lab": "{bypass: ['udp:53']}"}, "lab.bypass: not supported on backend qemu"),
    ({"backend": "qemu", "lab": "{trace_stages: true}"}, "lab.trace_stages: not supported on backend qemu"),
    ({"backend": "qemu", "lab": "{queue_at: host}"}, "lab.queue_at: netns backend only"),
    ({"lab": "{queue_at: nic}"}, "lab.queue_at: 'nic' is not one of"),
    ({"emulator": "{late_threshold: 2}"}, "emulator.late_threshold"),
    ({"backend": "qemu", "qemu": "{memory_mb: 64}"}, "qemu.memory_mb: 64 is below the minimum"),
    ({"backend": "qemu", "qemu": "{vcpus: 2}"}, "qemu.vcpus: unknown key"),
    ({"backend": "kvm"}, "backend: 'kvm' is not one of"),
    ({"routers": "{default: {scheme: dctcp, queue_manager: {k_pkt: 5}}}"}, "k_pkt"),
    ({"routers": "{default: {scheme: no_such_scheme}}"}, "no_such_scheme"),
    ({"variants": "{fast: {network: {link_rate_gbps: -1}}}"}, "variant 'fast': network.link_rate_gbps: -1.0 is below the minimum"),
    ({"variants": "{odd: {transport: {ecn: maybe}}}"}, "variant 'odd': transport.ecn: expected true or false"),
    ({"lab": "{window: 1000}"}, "lab.window: 1000 is not a power of two"),
]


@pytest.mark.parametrize("override,message", CASES, ids=[c[1][:40] for c in CASES])
def test_bad_field_is_named(tmp_path, lab_bins, override, message):
    path = experiment(tmp_path, **override)
    p = lab("check", path, bins=lab_bins)
    assert p.returncode == 2, p.stdout + p.stderr
    assert message in p.stderr, p.stderr
    assert path in p.stderr  # the file is named too


def test_run_refuses_a_bad_file_before_starting_anything(tmp_path, lab_bins, prefix):
    path = experiment(tmp_path, transport="{cc: dctcp}")
    p = lab("run", path, "--prefix", prefix, bins=lab_bins)
    assert p.returncode == 2
    assert "transport.cc" in p.stderr
    assert namespaces(prefix) == []
    assert not (tmp_path / "results").exists()


def test_good_file_checks(tmp_path, lab_bins):
    p = lab("check", experiment(tmp_path), bins=lab_bins)
    assert p.returncode == 0, p.stderr
    assert "3 hosts, backend netns, workload bulk" in p.stdout


def test_qemu_file_with_dctcp_checks(tmp_path, lab_bins):
    """DCTCP is refused on netns (above) and accepted on qemu, whose guests have tcp_dctcp."""
    p = lab("check", experiment(tmp_path, backend="qemu", transport="{cc: dctcp, ecn: true}",
                                qemu="{memory_mb: 256}"), bins=lab_bins)
    assert p.returncode == 0, p.stderr
    assert "3 hosts, backend qemu, workload bulk" in p.stdout


def test_realtime_priority_only_where_the_engine_can_sleep():
    # Timeslots the engine spins through would get it throttled under SCHED_FIFO (runner.MIN_RT_TIMESLOT_US).
    from flexlab.runner import realtime_priority
    def cfg(gbps, prio=20, apkt=1500):
        return {"network": {"link_rate_gbps": gbps, "abstract_packet_bytes": apkt}, "emulator": {"realtime_priority": prio}}
    assert realtime_priority(cfg(0.05)) == 20    # 240 us timeslots
    assert realtime_priority(cfg(0.1)) == 20     # 120 us
    assert realtime_priority(cfg(0.2)) == 0      # 60 us: spins
    assert realtime_priority(cfg(1)) == 0
    assert realtime_priority(cfg(0.2, apkt=9000)) == 20  # 360 us
    assert realtime_priority(cfg(0.05, prio=0)) == 0


def test_a_machine_that_refuses_sched_fifo_runs_without(monkeypatch, capsys):
    """EPERM from sched_setscheduler (a VM or container without real-time
    budget, even as root) is the machine's limit: the run goes on under
    normal scheduling, says so, and records no real-time thread; any other
    failure still stops the run naming the field."""
    import os
    from flexlab import runner
    from flexlab.errors import LabError

    def refuse(*_):
        raise PermissionError(1, "Operation not permitted")
    monkeypatch.setattr(os, "sched_setscheduler", refuse)
    assert runner._realtime_engine(os.getpid(), 20) == []
    said = capsys.readouterr()
    assert "refuses SCHED_FIFO" in said.out + said.err

    def broken(*_):
        raise OSError(22, "Invalid argument")
    monkeypatch.setattr(os, "sched_setscheduler", broken)
    import pytest
    with pytest.raises(LabError, match="emulator.realtime_priority"):
        runner._realtime_engine(os.getpid(), 20)
