"""One short real-TCP experiment end to end through `scripts/lab run`: the
requests complete, the emulator answered exactly the requests the endpoints
made for the packets they held, marks appear where ECN is on and the
marking threshold is low (and not where it is off), and the results folder
has the summary, runs.csv and the plots with their CSVs; nothing is left
(namespaces, the emulator's DPDK runtime folder)."""
from __future__ import annotations

import csv

import yaml

from flexlab.backends.base import dpdk_runtime_root
from lab_cli import lab, namespaces

EXPERIMENT = """\
description: lab end-to-end test
topology: {kind: single_rack, endpoints: 3}
network: {link_rate_gbps: 0.05}
transport: {cc: cubic, ecn: false}
routers: {default: {scheme: droptail, queue_manager: {capacity_pkts: 64}}}
workload: {kind: rpc, clients: [0], servers: [1, 2], sizes: "fixed:200000", rate_per_s: 10}
duration_s: 4
drain_s: 10
emulator: {occupancy_interval_us: 1000, endpoint_queue_pkts: 64}
variants:
  droptail: {}
  dctcp_k2_ecn:
    routers: {default: {scheme: dctcp, queue_manager: {k_pkts: 2}}}
    transport: {ecn: true}
"""


def test_short_experiment_end_to_end(tmp_path, lab_bins, prefix):
    exp = tmp_path / "e2e.yaml"
    exp.write_text(EXPERIMENT)
    out = tmp_path / "results"
    p = lab("run", str(exp), "--out", str(out), "--prefix", prefix, bins=lab_bins, timeout=240)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "[2/2] dctcp_k2_ecn/r0:" in p.stdout
    assert namespaces(prefix) == []
    assert not (dpdk_runtime_root() / prefix).exists()  # the emulator's EAL runtime folder goes too
    marks = {}
    for variant in ("droptail", "dctcp_k2_ecn"):
        s = yaml.safe_load((out / variant / "r0" / "summary.yaml").read_text())
        w, e, ep = s["workload"], s["emulator"], s["endpoints"]
        assert w["requests"] >= 20 and w["ok"] == w["requests"], w  # every flow completed
        assert all(s["checks"].values()), s["checks"]
        # Verdicts the emulator sent == verdicts the endpoints applied == the requests for held packets.
        assert e["verdicts"] == ep["verdicts"] == ep["requests"] == e["requests"]
        assert ep["packets_held"] == ep["packets_released"] + ep["packets_marked"] + ep["packets_dropped"]
        assert ep["timeout_dropped"] == ep["timeout_accepted"] == 0
        assert ep["cpu_us"] > 0 and ep["cpu_ns_per_packet"] == 1000 * ep["cpu_us"] / ep["packets_held"]
        assert e["pending_at_exit"] == 0
        # Lateness is reported and, past the threshold, marked in the run's line.
        assert e["late_threshold"] == 0.001 and e["on_time"] == (e["late_fraction"] <= e["late_threshold"])
        line = next(l for l in p.stdout.splitlines() if f"] {variant}/r0:" in l)
        assert ("LATE:" in line) == (not e["on_time"]), line
        marks[variant] = (e["marks"], ep["packets_marked"])
        for f in ("emulator/occupancy.csv", "emulator/counters.csv", "run.yaml", "workload/h0.rpc.csv"):
            assert (out / variant / "r0" / f).exists(), f
    assert marks["droptail"] == (0, 0)
    assert marks["dctcp_k2_ecn"][0] > 0 and marks["dctcp_k2_ecn"][0] == marks["dctcp_k2_ecn"][1]
    rows = list(csv.DictReader(open(out / "runs.csv")))
    assert [r["status"] for r in rows] == ["ok", "ok"]
    assert all(r["on_time"] in ("True", "False") for r in rows)
    for stem in ("fct_by_size", "fct_tradeoff", "queue_timeseries", "queue_cdf"):
        assert (out / f"{stem}.png").stat().st_size > 10000
        assert len(list(csv.reader(open(out / f"{stem}.csv")))) > 1


def test_packets_held_in_the_hosts_namespaces(tmp_path, lab_bins, prefix):
    """lab.queue_at host: NFQUEUE in each host's POSTROUTING (no bridge
    netfilter); the same accounting holds and CE marks reach the receiver."""
    exp = tmp_path / "host_queue.yaml"
    text = EXPERIMENT.replace("drain_s: 10", "drain_s: 10\nlab: {queue_at: host}")
    exp.write_text(text[:text.index("variants:")] + "variants:\n  dctcp_k2_ecn:\n"
                   "    routers: {default: {scheme: dctcp, queue_manager: {k_pkts: 2}}}\n    transport: {ecn: true}\n")
    out = tmp_path / "results"
    p = lab("run", str(exp), "--out", str(out), "--prefix", prefix, bins=lab_bins, timeout=240)
    assert p.returncode == 0, p.stdout + p.stderr
    assert namespaces(prefix) == []
    s = yaml.safe_load((out / "dctcp_k2_ecn" / "r0" / "summary.yaml").read_text())
    w, e, ep = s["workload"], s["emulator"], s["endpoints"]
    assert w["requests"] >= 20 and w["ok"] == w["requests"], w
    assert e["verdicts"] == ep["verdicts"] == ep["requests"] == e["requests"] > 0
    assert ep["packets_held"] == ep["packets_released"] + ep["packets_marked"] + ep["packets_dropped"]
    assert e["marks"] > 0 and e["marks"] == ep["packets_marked"]
