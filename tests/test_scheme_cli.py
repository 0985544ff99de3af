"""What a scheme writer and a new user meet at the command line (issue 21, items 9 and 10):
`flexplane-emulator list` prints each parameter's range; a DCTCP `k_pkts` that could never mark
is a config error naming the field and its place; the demo's load sweep runs closed loop, so its
flows finish."""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
# The binaries under test: FLEXPLANE_BIN_DIR (scripts/run_tests.sh sets it), else build/.
BIN = Path(os.environ.get("FLEXPLANE_BIN_DIR", REPO / "build")) / "flexplane-emulator"
CONFIGS = REPO / "experiments" / "configs"


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN), *args], capture_output=True, text=True, cwd=cwd, timeout=300)


def listed_params(out: str, section: str, component: str) -> dict[str, str]:
    """The parameter lines `list` prints under `component` in the section titled `section`."""
    lines = out.splitlines()
    first = lines.index(section)
    start = next(i for i, l in enumerate(lines) if i > first and re.match(rf"  {re.escape(component)}\s", l))
    params = {}
    for line in lines[start + 1:]:
        if not line.startswith("      "):
            break
        params[line.split()[0]] = line
    return params


def test_list_prints_each_parameters_range() -> None:
    r = run("list")
    assert r.returncode == 0, r.stderr
    dctcp = listed_params(r.stdout, "Queue managers:", "dctcp")
    assert re.search(r"k_pkts\s+uint32\s+default 65\s+\[0, 1048576\]\s+mark arrivals", dctcp["k_pkts"])
    assert re.search(r"capacity_pkts\s+uint32\s+default 1024\s+\[1, 1048576\]\s+tail-drop", dctcp["capacity_pkts"])
    assert re.search(r"drop_non_ect\s+bool\s+default false\s+true\|false\s+above k_pkts", dctcp["drop_non_ect"])
    red = listed_params(r.stdout, "Queue managers:", "red")
    assert re.search(r"weight\s+double\s+default 0.03125\s+\[0, 1\]\s+EWMA", red["weight"])
    codel = listed_params(r.stdout, "Queue managers:", "codel")
    assert re.search(r"target_us\s+double\s+default 5000\s+\[0, 1e\+09\]\s+target sojourn", codel["target_us"])
    leaf_spine = listed_params(r.stdout, "Topology kinds (topology.kind):", "leaf_spine")
    assert re.search(r"spines\s+uint32\s+default 2\s+\[1, 256\]\s+spine routers", leaf_spine["spines"])


def write(tmp: Path, text: str) -> Path:
    p = tmp / "exp.yaml"
    p.write_text(text)
    return p


def test_dctcp_k_pkts_that_could_never_mark_is_a_config_error(tmp_path: Path) -> None:
    cfg = write(tmp_path, """\
topology: {kind: leaf_spine, racks: 2, endpoints_per_rack: 2, spines: 1}
routers:
  default:
    scheme: dctcp
    queue_manager: {capacity_pkts: 64, k_pkts: 100}
workload: {kind: poisson, load: 0.2, fixed_size_pkts: 3}
run: {duration_ms: 1}
""")
    for cmd in ("check", "run"):
        r = run(cmd, str(cfg), *(["--out", str(tmp_path / "out")] if cmd == "run" else []))
        assert r.returncode == 2, (cmd, r.stdout, r.stderr)
        # At the k_pkts key (line 5, column 40), naming both fields.
        assert re.search(r"exp\.yaml:5:40: routers\.default\.queue_manager\.k_pkts \(queue_manager 'dctcp'\): "
                         r"k_pkts \(100\) must be below capacity_pkts - 1 \(64 - 1\)", r.stderr), (cmd, r.stderr)
    assert not (tmp_path / "out").exists()
    # The largest K that can still mark is accepted.
    ok = write(tmp_path, cfg.read_text().replace("k_pkts: 100", "k_pkts: 62"))
    r = run("check", str(ok))
    assert r.returncode == 0, r.stderr


def test_load_sweep_runs_closed_loop_and_its_flows_finish(tmp_path: Path) -> None:
    """The demo's sweep with the transports of the comparison: a 20-ms copy of its busiest
    variant finishes every flow (open loop left hundreds unfinished and millions dropped)."""
    sweep = yaml.safe_load((CONFIGS / "load_sweep.yaml").read_text())
    comparison = yaml.safe_load((CONFIGS / "scheduler_comparison.yaml").read_text())
    assert sweep["transport"]["kind"] == comparison["transport"]["kind"] == "dctcp"
    text = (CONFIGS / "load_sweep.yaml").read_text()
    text = text.replace("../../topologies/", f"{REPO}/topologies/").replace("../data/", f"{REPO}/experiments/data/")
    text = text.replace("duration_ms: 300", "duration_ms: 20").replace("drain_ms: 200", "drain_ms: 100")
    busiest = max(sweep["variants"], key=lambda v: sweep["variants"][v]["workload"]["load"])
    cfg = write(tmp_path, text)
    r = run("run", str(cfg), "--variant", busiest, "--out", str(tmp_path / "out"), "--quiet")
    assert r.returncode == 0, r.stderr
    m = re.search(r"flows (\d+): finished (\d+), unfinished (\d+)", r.stdout)
    assert m, r.stdout
    flows, finished, unfinished = map(int, m.groups())
    assert flows > 100 and finished == flows and unfinished == 0, r.stdout
