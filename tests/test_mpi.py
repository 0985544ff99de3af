"""Runs across processes (issue 25, docs/mpi.md): `mpirun -np R flexplane-emulator
run CONFIG` splits the routers over R ranks of --cores threads each and must
give outputs byte-identical to one process (all but metadata.yaml's timing
fields and its `ranks`), open and closed loop, on a leaf-spine and a k = 4 fat
tree. A rank killed mid-run ends the whole job with an error, no hang."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
BIN = Path(os.environ.get("FLEXPLANE_BIN_DIR", REPO / "build")) / "flexplane-emulator"
WEB_SEARCH = REPO / "experiments" / "data" / "flow-sizes" / "web-search.cdf"
PFC_TRACE = REPO / "experiments" / "configs" / "pfc_incast.flows.csv"
MPIRUN = shutil.which("mpirun")
# mpirun refuses root unless told (CI runs as root); --oversubscribe: more ranks than CPUs.
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1")

pytestmark = pytest.mark.skipif(MPIRUN is None, reason="mpirun not installed (scripts/install_deps.sh installs it)")

LEAF_SPINE = "{kind: leaf_spine, racks: 4, endpoints_per_rack: 4, spines: 2}"
FAT_TREE = "{kind: fat_tree, k: 4}"
CASES = {
    "leaf_spine_open": f"""
seed: 3
topology: {LEAF_SPINE}
routers: {{default: {{scheme: droptail, queue_manager: {{capacity_pkts: 8}}}}}}
workload: {{kind: poisson, load: 0.9, size_cdf: {WEB_SEARCH}}}
run: {{duration_ms: 3, drain_ms: 100, occupancy_interval_us: 6, packet_log: true}}
""",
    "leaf_spine_dctcp": f"""
seed: 5
topology: {LEAF_SPINE}
routers:
  default: {{scheme: dctcp, queue_manager: {{capacity_pkts: 64, k_pkts: 20}}}}
  spine: {{scheme: red, queue_manager: {{capacity_pkts: 64, min_th_pkts: 8, max_th_pkts: 24, ecn: true}}}}
transport: {{kind: dctcp, min_rto_us: 200}}
workload: {{kind: poisson, load: 0.6, size_cdf: {WEB_SEARCH}}}
run: {{duration_ms: 3, drain_ms: 200, occupancy_interval_us: 6, packet_log: true}}
""",
    "fat_tree_open": f"""
seed: 7
topology: {FAT_TREE}
routers: {{default: {{scheme: droptail, queue_manager: {{capacity_pkts: 16}}}}}}
workload: {{kind: poisson, load: 0.7, size_cdf: {WEB_SEARCH}}}
run: {{duration_ms: 6, drain_ms: 100, occupancy_interval_us: 12, packet_log: true}}
""",
    "fat_tree_newreno_sack": f"""
seed: 11
topology: {FAT_TREE}
routers: {{default: {{scheme: droptail, queue_manager: {{capacity_pkts: 24}}}}}}
transport: {{kind: newreno, sack: true, min_rto_us: 200}}
workload: {{kind: poisson, load: 0.7, size_cdf: {WEB_SEARCH}}}
run: {{duration_ms: 6, drain_ms: 200, occupancy_interval_us: 12}}
""",
    "fat_tree_dctcp": f"""
seed: 13
topology: {FAT_TREE}
routers: {{default: {{scheme: dctcp, queue_manager: {{capacity_pkts: 64, k_pkts: 20}}}}}}
transport: {{kind: dctcp, min_rto_us: 200}}
workload: {{kind: poisson, load: 0.6, size_cdf: {WEB_SEARCH}}}
run: {{duration_ms: 6, drain_ms: 200, occupancy_interval_us: 12}}
""",
    # Today's transports and collectives (issue 26) across ranks: their
    # state lives in the sources and sinks (endpoint groups), their feedback
    # in packet fields and ACKs, so nothing of theirs is rank-specific.
    "fat_tree_dcqcn": f"""
seed: 17
topology: {FAT_TREE}
routers: {{default: {{scheme: red, queue_manager: {{capacity_pkts: 64, min_th_pkts: 4, max_th_pkts: 20, max_p: 0.2, weight: 1, ecn: true}}}}}}
transport: {{kind: dcqcn}}
workload: {{kind: poisson, load: 0.6, size_cdf: {WEB_SEARCH}}}
run: {{duration_ms: 4, drain_ms: 200, occupancy_interval_us: 12}}
""",
    "fat_tree_hpcc": f"""
seed: 19
topology: {FAT_TREE}
routers: {{default: {{scheme: hpcc, queue_manager: {{capacity_pkts: 64, base_rtt_timeslots: 16}}}}}}
transport: {{kind: hpcc}}
workload: {{kind: poisson, load: 0.6, size_cdf: {WEB_SEARCH}}}
run: {{duration_ms: 4, drain_ms: 200, occupancy_interval_us: 12}}
""",
    "leaf_spine_swift_paced": f"""
seed: 23
topology: {LEAF_SPINE}
routers: {{default: {{scheme: droptail, queue_manager: {{capacity_pkts: 64}}}}}}
transport: {{kind: swift, swift_target_delay_us: 10, pacing_gain: 1}}
workload: {{kind: poisson, load: 0.6, size_cdf: {WEB_SEARCH}}}
run: {{duration_ms: 3, drain_ms: 200, occupancy_interval_us: 6}}
""",
    "fat_tree_ring_allreduce_spray": f"""
seed: 29
topology: {FAT_TREE}
routers: {{default: {{scheme: dctcp, load_balancer: spray, queue_manager: {{capacity_pkts: 64, k_pkts: 20}}}}}}
transport: {{kind: dctcp, min_rto_us: 1000, sack: true, max_reordering_pkts: 300}}
workload: {{kind: collective, collective: ring_allreduce, ranks: 8, rank_stride: 2, message_pkts: 256, iterations: 2, compute_gap_timeslots: 42}}
run: {{duration_ms: 1, drain_ms: 200, occupancy_interval_us: 12}}
""",
    # PFC (api/pfc.h): pause frames cross ranks on their links' control
    # lanes; the 8 -> 1 incast of experiments/configs/pfc_incast.yaml.
    "fat_tree_pfc": f"""
seed: 1
network: {{link_rate_gbps: 100}}
topology: {{kind: fat_tree, k: 4, link_latency_timeslots: 9}}
routers: {{default: {{scheme: droptail, queue_manager: {{capacity_pkts: 1024}}, pfc: {{xoff_pkts: 16, xon_pkts: 12, headroom_pkts: 24}}}}}}
transport: {{kind: reno, ack_latency: propagation}}
workload: {{kind: trace, trace: {PFC_TRACE}}}
run: {{duration_ms: 1, drain_ms: 50, occupancy_interval_us: 1.2}}
""",
}
# metadata.yaml fields that may differ: how long things took, and how the run was split.
TIMING = {"wall_seconds", "peak_rss_mb", "peak_rss_mb_by_rank", "phase_seconds"}


def run(cfg: Path, out: Path, ranks: int, cores: int) -> None:
    cmd = [str(BIN), "run", str(cfg), "--quiet", "--out", str(out), "--cores", str(cores)]
    if ranks > 1:
        cmd = [MPIRUN, "-np", str(ranks), "--oversubscribe", *cmd]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=ENV)
    assert p.returncode == 0, p.stdout + p.stderr


def metadata(out: Path) -> dict:
    m = yaml.safe_load((out / "metadata.yaml").read_text())
    for k in ("cores", "ranks"):
        m.pop(k, None)
    for k in TIMING:
        m["results"].pop(k, None)
    return m


@pytest.mark.parametrize("case", sorted(CASES))
def test_ranks_give_the_outputs_of_one_process(case: str, tmp_path: Path) -> None:
    cfg = tmp_path / f"{case}.yaml"
    cfg.write_text(CASES[case])
    ref = tmp_path / "one"
    run(cfg, ref, 1, 1)
    files = sorted(p.name for p in ref.iterdir() if p.name != "metadata.yaml")
    assert {"flows.csv", "counters.csv", "losses.csv", "occupancy.bin", "occupancy_summary.csv"} <= set(files)
    flows = (ref / "flows.csv").read_text().splitlines()
    assert len(flows) >= 10  # the comparison is about something (the PFC incast: 9 flows of 3,000 packets)
    if case.startswith("fat_tree_ring"):
        assert "collective.csv" in files
    if case == "fat_tree_pfc":  # pauses between pods: from aggregation to core routers and back
        rows = (ref / "pfc.csv").read_text().splitlines()[1:]
        assert any(r.startswith("agg") and ",core" in r and int(r.split(",")[4]) > 0 for r in rows), rows
        assert any(r.startswith("agg") and ",core" in r and int(r.split(",")[7]) > 0 for r in rows), rows
    splits = [(2, 1), (3, 1)] + ([(2, 2)] if case == "fat_tree_dctcp" else [])  # ranks x cores
    for ranks, cores in splits:
        out = tmp_path / f"r{ranks}c{cores}"
        run(cfg, out, ranks, cores)
        assert sorted(p.name for p in out.iterdir() if p.name != "metadata.yaml") == files
        for f in files:
            assert (out / f).read_bytes() == (ref / f).read_bytes(), f"{f} differs with {ranks} ranks x {cores} cores"
        meta = yaml.safe_load((out / "metadata.yaml").read_text())
        assert meta["ranks"] == ranks and meta["cores"] == cores
        assert len(meta["results"]["peak_rss_mb_by_rank"]) == ranks and min(meta["results"]["peak_rss_mb_by_rank"]) > 0
        assert metadata(out) == metadata(ref)


def test_a_killed_rank_ends_the_job(tmp_path: Path) -> None:
    """SIGKILL to one rank mid-run: mpirun ends every rank and exits non-zero, naming it."""
    cfg = tmp_path / "long.yaml"
    cfg.write_text(f"""
seed: 1
topology: {FAT_TREE}
routers: {{default: {{scheme: dctcp, queue_manager: {{capacity_pkts: 64, k_pkts: 20}}}}}}
transport: {{kind: dctcp}}
workload: {{kind: poisson, load: 0.6, size_cdf: {WEB_SEARCH}}}
run: {{duration_ms: 2000, drain_ms: 10}}
""")
    marker = tmp_path / "killed-out"
    p = subprocess.Popen([MPIRUN, "-np", "2", "--oversubscribe", str(BIN), "run", str(cfg), "--quiet", "--out", str(marker)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    try:
        pids: list[int] = []
        deadline = time.monotonic() + 120
        while len(pids) < 2 and time.monotonic() < deadline:  # both ranks started
            r = subprocess.run(["pgrep", "-f", "--", f"--out {marker}"], capture_output=True, text=True)
            pids = [int(x) for x in r.stdout.split() if int(x) != p.pid]
            pids = [x for x in pids if Path(f"/proc/{x}/exe").exists() and os.readlink(f"/proc/{x}/exe").endswith("flexplane-emulator")]
            time.sleep(0.2)
        assert len(pids) == 2, "the ranks did not start"
        time.sleep(1.0)  # well into the run
        assert p.poll() is None, "the run ended before the kill"
        os.kill(pids[1], signal.SIGKILL)
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode != 0
    assert "signal 9" in err or "Killed" in err or "killed" in err, err
    time.sleep(0.5)
    left = subprocess.run(["pgrep", "-f", "--", f"--out {marker}"], capture_output=True, text=True).stdout.split()
    assert not left, f"ranks left running: {left}"
    assert not (marker / "flows.csv").exists()


@pytest.mark.parametrize("args,message", [
    (["check"], "under mpirun only `run` splits across ranks"),
])
def test_what_ranks_refuse_is_named(args: list[str], message: str, tmp_path: Path) -> None:
    cfg = tmp_path / "pfc.yaml"
    cfg.write_text(f"""
topology: {LEAF_SPINE}
routers: {{default: {{scheme: droptail, queue_manager: {{capacity_pkts: 64}}, pfc: {{}}}}}}
workload: {{kind: poisson, load: 0.3, size_cdf: {WEB_SEARCH}}}
run: {{duration_ms: 1, drain_ms: 10}}
""")
    out = ["--out", str(tmp_path / "out")] if args[0] == "run" else []
    p = subprocess.run([MPIRUN, "-np", "2", "--oversubscribe", str(BIN), args[0], str(cfg), *args[1:], *out],
                       capture_output=True, text=True, timeout=120, env=ENV)
    assert p.returncode != 0
    assert message in p.stderr, p.stderr
