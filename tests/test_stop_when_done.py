"""Stop when done (run.stop_when_done, issue 24): a virtual-time run ends once
every flow is done and the network is empty, with duration + drain as a cap;
metadata.yaml says why and when it ended and the peak RSS. Stopping early
changes nothing but the sampled series' length and those metadata fields, on
any number of cores (docs/output-format.md, "What stopping early changes")."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
BIN = Path(os.environ.get("FLEXPLANE_BIN_DIR", REPO / "build")) / "flexplane-emulator"
WEB_SEARCH = REPO / "experiments" / "data" / "flow-sizes" / "web-search.cdf"
sys.path.insert(0, str(REPO / "plots"))
from occupancy_io import read_occupancy_bin  # noqa: E402

# 2 racks of 4 under 2 spines, DCTCP senders, 5 ms of arrivals and a 200 ms drain: every
# flow is acknowledged within tens of ms. RED exports scheme statistics (scheme_stats.csv).
CLOSED = f"""
seed: 5
topology: {{kind: leaf_spine, racks: 2, endpoints_per_rack: 4, spines: 2}}
routers:
  default: {{scheme: dctcp, queue_manager: {{capacity_pkts: 64, k_pkts: 20}}}}
  spine: {{scheme: red, queue_manager: {{capacity_pkts: 64, min_th_pkts: 8, max_th_pkts: 24, ecn: true}}}}
transport: {{kind: dctcp, min_rto_us: 200}}
workload: {{kind: poisson, load: 0.6, size_cdf: {WEB_SEARCH}}}
run: {{duration_ms: 5, drain_ms: 200, occupancy_interval_us: 6, packet_log: true}}
"""
# Open loop into small queues: flows that lose a packet never finish, and are done all the same.
OPEN = f"""
seed: 3
topology: {{kind: leaf_spine, racks: 2, endpoints_per_rack: 4, spines: 2}}
routers:
  default: {{scheme: droptail, queue_manager: {{capacity_pkts: 8}}}}
workload: {{kind: poisson, load: 0.9, size_cdf: {WEB_SEARCH}}}
run: {{duration_ms: 5, drain_ms: 100, occupancy_interval_us: 6, packet_log: true}}
"""
SAME = ("flows.csv", "flows_summary.csv", "counters.csv", "losses.csv", "packets.csv")


def emulate(cfg: Path, out: Path, *extra: str) -> tuple[dict, int]:
    """Runs the emulator in a child of a fresh Python, which reports the child's
    peak RSS (KiB) from getrusage(RUSAGE_CHILDREN): that child alone."""
    probe = ("import json, resource, subprocess, sys, time; t = time.monotonic(); "
             "r = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
             "print(json.dumps({'rc': r.returncode, 'err': r.stderr, 'wall': time.monotonic() - t, "
             "'maxrss_kb': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))")
    p = subprocess.run([sys.executable, "-c", probe, str(BIN), "run", str(cfg), "--quiet", "--out", str(out), *extra],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    res = json.loads(p.stdout)
    assert res["rc"] == 0, res["err"]
    meta = yaml.safe_load((out / "metadata.yaml").read_text())
    # Where the wall time went: four phases, inside the child's whole life.
    ph = meta["results"]["phase_seconds"]
    assert set(ph) == {"before", "setup", "engine", "outputs"} and min(ph.values()) >= 0
    assert sum(ph.values()) <= res["wall"] + 0.02  # `before` counts from a clock tick (10 ms)
    assert ph["engine"] >= meta["results"]["wall_seconds"]
    return meta, res["maxrss_kb"]


def write(tmp: Path, text: str, name: str) -> Path:
    p = tmp / name
    p.write_text(text)
    return p


def check_early_against_full(early: Path, full: Path, meta: dict) -> None:
    """Every flow-level file is the run to the cap's; the occupancy series is its prefix up
    to the stop, and what the full run has beyond it is empty."""
    for name in SAME:
        assert (early / name).read_bytes() == (full / name).read_bytes(), name
    a, b = read_occupancy_bin(early / "occupancy.bin"), read_occupancy_bin(full / "occupancy.bin")
    end = meta["timeslots"]
    for ra, rb in zip(a.routers, b.routers, strict=True):
        assert ra.name == rb.name
        assert 0 < ra.samples < rb.samples
        ta, tb = list(ra.times), list(rb.times)
        assert ta == tb[: ra.samples] and ta[-1] < end <= tb[ra.samples]
        n = ra.samples * ra.ports
        assert list(ra.packets) == list(rb.packets)[:n]
        assert not any(list(rb.packets)[n:])
    sa = (early / "scheme_stats.csv").read_text().splitlines()
    sb = (full / "scheme_stats.csv").read_text().splitlines()
    assert len(sa) > 1 and sa == sb[: len(sa)] and len(sb) > len(sa)
    assert all(int(line.split(",")[0]) >= end for line in sb[len(sa):])


def test_closed_loop_run_stops_when_every_flow_is_acknowledged(tmp_path: Path) -> None:
    cfg = write(tmp_path, CLOSED, "closed.yaml")
    meta, maxrss_kb = emulate(cfg, tmp_path / "early")
    timeslot_us = meta["timeslot_ns"] / 1000
    cap = meta["arrival_timeslots"] + round(200_000 / timeslot_us)
    assert meta["stop_when_done"] is True
    assert meta["end_reason"] == "all_flows_done"
    assert meta["cap_timeslots"] == cap
    res = meta["results"]
    assert res["flows"] > 10 and res["finished"] == res["flows"]
    assert res["marks"] > 0
    # Ends soon after the last event (one 256-timeslot checkpoint after the first quiet one),
    # long before the cap.
    last = max(int(line.split(",")[0]) for line in (tmp_path / "early" / "packets.csv").read_text().splitlines()[1:])
    assert last < meta["timeslots"] <= last + 2 * 256 + 1
    assert meta["timeslots"] % 256 == 0
    assert meta["emulated_end_ms"] == meta["timeslots"] * meta["timeslot_ns"] / 1e6
    assert meta["emulated_end_ms"] < 20 < cap * timeslot_us / 1000
    # Peak RSS: what getrusage says of this process when the outputs were written.
    assert 0.8 * maxrss_kb / 1024 <= res["peak_rss_mb"] <= maxrss_kb / 1024
    # stop_when_done: false runs to the cap, with the same flows, counters and packets.
    full_cfg = write(tmp_path, CLOSED.replace("packet_log: true}", "packet_log: true, stop_when_done: false}"),
                     "full.yaml")
    full, _ = emulate(full_cfg, tmp_path / "full")
    assert full["end_reason"] == "cap" and full["stop_when_done"] is False
    assert full["timeslots"] == cap
    check_early_against_full(tmp_path / "early", tmp_path / "full", meta)
    for key in ("flows", "finished", "drops", "marks", "router_packet_hops", "nic_queueing"):
        assert full["results"][key] == res[key], key


def test_early_stop_is_identical_on_one_two_and_three_cores(tmp_path: Path) -> None:
    cfg = write(tmp_path, CLOSED, "closed.yaml")
    one, _ = emulate(cfg, tmp_path / "1")
    assert one["end_reason"] == "all_flows_done"
    files = sorted(p.name for p in (tmp_path / "1").iterdir() if p.name != "metadata.yaml")
    assert {"occupancy.bin", "occupancy_summary.csv", "scheme_stats.csv", *SAME} <= set(files)
    for cores, extra in (("2", ()), ("3", ()), ("2rr", ("--cores", "2"))):
        c = cfg if cores != "2rr" else write(
            tmp_path, CLOSED.replace("packet_log: true}", "packet_log: true, placement: round_robin}"), "rr.yaml")
        meta, _ = emulate(c, tmp_path / cores, *(extra or ("--cores", cores)))
        assert meta["cores"] == int(cores[0])
        assert meta["end_reason"] == "all_flows_done" and meta["timeslots"] == one["timeslots"]
        for name in files:
            assert (tmp_path / "1" / name).read_bytes() == (tmp_path / cores / name).read_bytes(), (cores, name)


def test_open_loop_run_stops_when_every_packet_is_delivered_or_dropped(tmp_path: Path) -> None:
    cfg = write(tmp_path, OPEN, "open.yaml")
    meta, _ = emulate(cfg, tmp_path / "early")
    res = meta["results"]
    assert meta["end_reason"] == "all_flows_done"
    assert res["unfinished_lost"] > 0 and res["unfinished_in_flight"] == 0
    assert res["finished"] + res["unfinished_lost"] == res["flows"]
    assert meta["timeslots"] < meta["cap_timeslots"] // 2
    last = max(int(line.split(",")[0]) for line in (tmp_path / "early" / "packets.csv").read_text().splitlines()[1:])
    assert last < meta["timeslots"] <= last + 2 * 256 + 1
    full_cfg = write(tmp_path, OPEN.replace("packet_log: true}", "packet_log: true, stop_when_done: false}"),
                     "full.yaml")
    full, _ = emulate(full_cfg, tmp_path / "full")
    assert full["end_reason"] == "cap" and full["timeslots"] == full["cap_timeslots"]
    for name in SAME:
        assert (tmp_path / "early" / name).read_bytes() == (tmp_path / "full" / name).read_bytes(), name


def test_run_with_flows_unfinished_at_the_cap_ends_at_the_cap(tmp_path: Path) -> None:
    # 0.05 ms of drain: DCTCP flows of the web-search mix are still sending at the cap.
    cfg = write(tmp_path, CLOSED.replace("drain_ms: 200", "drain_ms: 0.05"), "capped.yaml")
    meta, _ = emulate(cfg, tmp_path / "capped", "--cores", "2")
    assert meta["end_reason"] == "cap"
    assert meta["timeslots"] == meta["cap_timeslots"]
    assert meta["results"]["unfinished_in_flight"] > 0


def test_stop_when_done_must_be_a_boolean(tmp_path: Path) -> None:
    cfg = write(tmp_path, CLOSED.replace("packet_log: true}", "packet_log: true, stop_when_done: soon}"), "bad.yaml")
    r = subprocess.run([str(BIN), "check", str(cfg)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert "stop_when_done" in r.stderr and "soon" in r.stderr


BASE_DIR = os.environ.get("FLEXPLANE_BASE_BIN_DIR")


@pytest.mark.skipif(not BASE_DIR, reason="set FLEXPLANE_BASE_BIN_DIR to an emulator built before stop_when_done")
def test_stop_when_done_false_is_byte_identical_to_the_version_before(tmp_path: Path) -> None:
    """Opt-in A/B: with stop_when_done: false every file but metadata.yaml is the
    previous version's, byte for byte, and metadata.yaml differs only in the keys
    added and the timings (docs/output-format.md)."""
    base_bin = Path(BASE_DIR) / "flexplane-emulator"
    added = {"cap_timeslots", "stop_when_done", "end_reason", "emulated_end_ms"}
    for name, text in (("closed", CLOSED), ("open", OPEN)):
        base_cfg = write(tmp_path, text, f"{name}_base.yaml")
        off_cfg = write(tmp_path, text.replace("packet_log: true}", "packet_log: true, stop_when_done: false}"),
                        f"{name}_off.yaml")
        for b, c, out in ((base_bin, base_cfg, "base"), (BIN, off_cfg, "off")):
            r = subprocess.run([str(b), "run", str(c), "--quiet", "--out", str(tmp_path / name / out)],
                               capture_output=True, text=True, timeout=300)
            assert r.returncode == 0, r.stderr
        base, off = tmp_path / name / "base", tmp_path / name / "off"
        files = sorted(p.name for p in base.iterdir())
        assert files == sorted(p.name for p in off.iterdir())
        for f in files:
            if f != "metadata.yaml":
                assert (base / f).read_bytes() == (off / f).read_bytes(), (name, f)
        mb, mo = (yaml.safe_load((d / "metadata.yaml").read_text()) for d in (base, off))
        assert set(mo) - set(mb) == added
        for m in (mb, mo):
            for k in ("git_commit", "flexplane_version", "config_file", "config"):
                m.pop(k)
            m["results"].pop("wall_seconds")
            m["results"].pop("peak_rss_mb", None)
            m["results"].pop("phase_seconds", None)
        assert {k: v for k, v in mo.items() if k not in added} == mb
