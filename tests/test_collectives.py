"""Collective workloads end to end (workload.kind: collective, issue 26; docs/collectives.md):
a run writes collective.csv (per iteration) consistent with flows.csv, and sends.csv, which
replayed as a send list gives the same flows; cores change nothing; bad input names the field."""
from __future__ import annotations

import csv
import os
import subprocess
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
BIN = Path(os.environ.get("FLEXPLANE_BIN_DIR", REPO / "build")) / "flexplane-emulator"

BASE = """
seed: 1
topology: {kind: fat_tree, k: 4}
routers:
  default: {scheme: dctcp, queue_manager: {k_pkts: 20, capacity_pkts: 64}}
transport: {kind: dctcp, min_rto_us: 1000}
run: {duration_ms: 1, drain_ms: 100, cores: CORES}
"""


def run(tmp: Path, name: str, workload: str, cores: int = 1) -> Path:
    out = tmp / name
    cfg = tmp / f"{name}.yaml"
    cfg.write_text(BASE.replace("CORES", str(cores)) + workload + f"output: {{dir: {out}}}\n")
    r = subprocess.run([str(BIN), "run", str(cfg)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return out


def rows(path: Path):
    with path.open() as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def test_iterations_match_their_flows_and_sends_replay(tmp_path: Path) -> None:
    wl = ("workload: {kind: collective, collective: tree_allreduce, fanout: 3, ranks: 8, rank_stride: 2,\n"
          "           message_pkts: 40, iterations: 3, compute_gap_timeslots: 25}\n")
    out = run(tmp_path, "tree", wl)
    flows = rows(out / "flows.csv")
    sends = rows(out / "sends.csv")
    iters = rows(out / "collective.csv")
    assert len(flows) == len(sends) == 3 * 2 * 7  # 7 sends up and 7 down a 3-ary tree of 8 ranks
    assert {int(f["src"]) % 2 for f in flows} == {0}  # ranks on even endpoints
    assert all(f["finished"] == "1" for f in flows)
    by_iter: dict = {}
    for s, f in zip(sends, flows):
        assert s["send_id"] == f["flow_id"]
        by_iter.setdefault(int(s["iteration"]), []).append(f)
    prev_end = -1
    for it in iters:
        mine = by_iter[int(it["iteration"])]
        end = max(int(f["finish_timeslot"]) for f in mine)
        start = min(int(f["start_timeslot"]) for f in mine)
        assert int(it["flows"]) == int(it["finished"]) == len(mine)
        assert int(it["end_timeslot"]) == end and int(it["start_timeslot"]) == start
        assert abs(float(it["iteration_us"]) - (end - prev_end) * 1.2) < 1e-3  # 1500 B at 10 Gbit/s: 1.2 us
        prev_end = end
    assert int(iters[0]["start_timeslot"]) == 25  # the compute gap before the first sends
    meta = yaml.safe_load((out / "metadata.yaml").read_text())
    assert meta["results"]["collective"]["completed"] == 3
    assert meta["end_reason"] == "all_flows_done"
    assert meta["workload"]["ranks"] == 8 and meta["workload"]["fanout"] == 3

    replay = run(tmp_path, "replay", f"workload: {{kind: collective, sends: {out / 'sends.csv'}}}\n", cores=4)
    assert (replay / "flows.csv").read_text() == (out / "flows.csv").read_text()
    assert (replay / "collective.csv").read_text() == (out / "collective.csv").read_text()


def test_bad_collectives_name_the_field(tmp_path: Path) -> None:
    def check(workload: str, transport: bool = True) -> str:
        text = BASE.replace("CORES", "1")
        if not transport:
            text = text.replace("transport: {kind: dctcp, min_rto_us: 1000}\n", "")
        cfg = tmp_path / "bad.yaml"
        cfg.write_text(text + workload)
        r = subprocess.run([str(BIN), "check", str(cfg)], capture_output=True, text=True)
        assert r.returncode != 0
        return r.stderr

    assert "workload.message_pkts" in check("workload: {kind: collective, collective: ring_allreduce, message_pkts: 0}\n")
    assert "needs `message_pkts" in check("workload: {kind: collective, collective: ring_allreduce}\n")
    assert "workload.ranks: 17 ranks" in check(
        "workload: {kind: collective, collective: ring_allreduce, ranks: 17, message_pkts: 4}\n")
    assert "workload.fanout: only applies with collective: tree_allreduce" in check(
        "workload: {kind: collective, collective: ring_allreduce, fanout: 3, message_pkts: 4}\n")
    assert "workload.load: only applies with kind: poisson or trace" in check(
        "workload: {kind: collective, collective: ring_allreduce, load: 0.5, message_pkts: 4}\n")
    assert "exactly one of `collective: <name>`" in check("workload: {kind: collective}\n")
    assert "workload.ranks: only applies with kind: collective" in check(
        "workload: {kind: poisson, load: 0.5, fixed_size_pkts: 3, ranks: 4}\n")
    assert "transport.kind: a collective's sends start when others complete" in check(
        "workload: {kind: collective, collective: ring_allreduce, message_pkts: 4}\n", transport=False)
    sends = tmp_path / "s.csv"
    sends.write_text("send_id,src,dst,size_pkts,gap_timeslots,iteration,after\n0,0,1,4,0,0,\n1,2,3,4,0,0,0\n")
    assert f"{sends}:3: after: send 0 (0 -> 1) is neither a send nor a receive of endpoint 2" in check(
        f"workload: {{kind: collective, sends: {sends}}}\n")
