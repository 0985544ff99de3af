"""One short experiment on the qemu backend through `scripts/lab run`: three
QEMU/TCG VMs (Debian's kernel, the flexplane qdisc on eth0), two DCTCP
senders -> one receiver for a few seconds through the DCTCP switch with a
low K. The flows complete and carry data; every request the qdiscs made was
answered (verdicts == requests, on both sides, nothing left pending, no
fallback); every segment held left with its fate (held == released + marked
+ dropped, in segments); nothing the guests send is malformed; CE marks
were given by the emulator, applied by the senders' qdiscs and seen by the
receiver's TCP; nothing is left behind.

Three VMs, not two: a single sender's bottleneck is its own emulated NIC
queue (DropTail, lab.md), so only two senders build a queue at the DCTCP
switch port. Boot dominates the wall time (about 40 s of ~80 s here)."""
from __future__ import annotations

import csv
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import yaml

from lab_cli import LAB, lab, namespaces, processes_mentioning

EXPERIMENT = """\
description: lab qemu backend test
backend: qemu
topology: {kind: single_rack, endpoints: 3}
network: {link_rate_gbps: 0.004}
transport: {cc: dctcp, ecn: true}
routers: {default: {scheme: dctcp, queue_manager: {k_pkts: 4}}}
workload: {kind: bulk, senders: [1, 2], receiver: 0, interval_ms: 1000}
duration_s: 5
drain_s: 5
emulator: {occupancy_interval_us: 12000, realtime_priority: 0}
qemu: {memory_mb: 256}
"""


def _counters(path) -> dict[str, int]:
    return {r["counter"]: int(r["value"]) for r in csv.DictReader(open(path))}


def test_qemu_dctcp_bulk_end_to_end(tmp_path, lab_bins, prefix):
    exp = tmp_path / "qemu.yaml"
    exp.write_text(EXPERIMENT)
    out = tmp_path / "results"
    p = lab("run", str(exp), "--out", str(out), "--prefix", prefix, bins=lab_bins, timeout=540)
    assert p.returncode == 0, p.stdout + p.stderr
    assert namespaces(prefix) == []
    assert processes_mentioning(f"{prefix}t0") == []  # no QEMU left (its tap is named after the prefix)
    run = out / "default" / "r0"
    s = yaml.safe_load((run / "summary.yaml").read_text())
    w, e, ep = s["workload"], s["emulator"], s["endpoints"]
    # Completion: both DCTCP flows carried data in the intervals after warm-up.
    assert w["flows"] == 2 and w["intervals"] >= 3, w
    assert all(x > 0.1 for x in w["per_flow_mbps"]), w
    assert all(s["checks"].values()), s["checks"]
    # verdicts == requests: the emulator answered every request the qdiscs made, once.
    assert e["verdicts"] == e["requests"] == ep["verdicts"] == ep["requests_submitted"] > 100, (e, ep)
    assert e["pending_at_exit"] == 0 and ep["timeout_accepted"] == ep["timeout_dropped"] == 0
    # Like with like (docs/lab.md): every segment the qdiscs held left with its fate, in the
    # same unit (segments; with TSO on, an skb holds several); held == released + marked + dropped.
    assert ep["packets_held"] == ep["packets_released"] + ep["packets_marked"] + ep["packets_dropped"], ep
    for h in range(3):
        c = _counters(run / "endpoints" / f"h{h}" / "endpoint_counters.csv")
        assert c["packets_held"] == c["packets_released"] + c["packets_marked"] + c["packets_dropped"], (h, c)
        assert c["packets_held"] == c["qdisc_segs_managed"] >= c["qdisc_pkts_managed"], (h, c)
    # The guests' IPv6 ND / MLD frames reach the emulator's segment: link control, not malformed.
    assert e["malformed"] == 0 and ep["malformed"] == 0, (e, ep)
    # CE marks with K = 4: given by the emulator, applied by the senders' qdiscs, seen by the receiver.
    assert e["marks"] > 0 and ep["packets_marked"] > 0, (e, ep)
    assert sum(_counters(run / "endpoints" / f"h{h}" / "endpoint_counters.csv")["qdisc_verdict_mark"]
               for h in range(3)) == e["marks"]
    assert _counters(run / "endpoints" / "h0" / "netstat.csv")["IpExt.InCEPkts"] > 0
    conf = yaml.safe_load((run / "run.yaml").read_text())
    assert conf["backend"] == "qemu" and conf["config"]["transport"]["cc"] == "dctcp"


LONG = EXPERIMENT.replace("endpoints: 3", "endpoints: 2").replace("senders: [1, 2]", "senders: [1]").replace(
    "duration_s: 5", "duration_s: 120")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["SIGINT", "SIGKILL+cleanup"])
def test_qemu_run_leaves_nothing(tmp_path, lab_bins, prefix, sig):
    """Mid-workload SIGINT: the runner stops the VMs and removes the namespace
    itself (exit 130). SIGKILL: the namespace and the QEMU processes in it are
    left, and `lab cleanup --prefix` removes both and the run's scratch folder."""
    exp = tmp_path / "long.yaml"
    exp.write_text(LONG)
    p = subprocess.Popen([str(LAB), "run", str(exp), "--out", str(tmp_path / "out"), "--prefix", prefix,
                          "--bin-dir", str(lab_bins)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen, deadline = "", time.time() + 400
    while "workload bulk" not in seen and time.time() < deadline and p.poll() is None:
        seen += p.stdout.readline()
    assert "workload bulk" in seen, seen
    time.sleep(2)
    qemus = processes_mentioning(f"ifname={prefix}t")
    assert len(qemus) == 2 and namespaces(prefix) == [prefix], (qemus, namespaces(prefix))
    p.send_signal(sig)
    out, _ = p.communicate(timeout=120)
    if sig == signal.SIGINT:
        assert p.returncode == 130, seen + out
        assert "tearing everything down" in out
    else:
        assert namespaces(prefix) == [prefix]  # left for cleanup
        c = lab("cleanup", "--prefix", prefix)
        assert c.returncode == 0 and f"netns {prefix}" in c.stdout, c.stdout + c.stderr
    assert namespaces(prefix) == []
    deadline = time.time() + 15
    while processes_mentioning(f"ifname={prefix}t") and time.time() < deadline:
        time.sleep(0.2)
    assert processes_mentioning(f"ifname={prefix}t") == []
    assert list(Path(tempfile.gettempdir()).glob(f"flexlab-{prefix}-*")) == []  # the VMs' scratch folder
