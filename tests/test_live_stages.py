"""scripts/live_stages.py (issue 22; docs/live.md, "Where a round trip goes"):
the emulator's stages.csv joined with an endpoint's requests.csv gives each
stage's time, and the stages add up to the round trip."""
from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "live_stages.py"


def write(tmp: Path, n: int = 40):
    emu, ep = tmp / "emu", tmp / "ep"
    emu.mkdir()
    ep.mkdir()
    with open(emu / "stages.csv", "w") as f:
        f.write("src,flow,seq,rx_ns,arrival_timeslot,arrival_due_ns,verdict_timeslot,verdict_due_ns,collect_ns,tx_ns,action\n")
        for i in range(n):
            t = 1_000_000 * (i + 1)
            # sent t; rx +10 us; entered +2 us; emulated 3.6 us; collected +1 us; sent back +5 us
            f.write(f"0,{i},0,{t + 10000},{i},{t + 12000},{i + 3},{t + 15600},{t + 16600},{t + 21600},release\n")
        f.write("1,999,0,5,1,6,4,9,10,11,release\n")  # another endpoint's: not joined
        f.write(f"0,{n},0,7,,,,,,,\n")                 # refused before entering: no stages
    with open(ep / "requests.csv", "w") as f:
        f.write("flow,seq,sent_ns,verdict_ns,action\n")
        for i in range(n):
            t = 1_000_000 * (i + 1)
            f.write(f"{i},0,{t},{t + 30000},release\n")  # back at the endpoint +8.4 us after tx
        f.write(f"{n},0,7,,\n")
    return emu, ep


def test_stages_add_up(tmp_path):
    emu, ep = write(tmp_path)
    p = subprocess.run([sys.executable, str(SCRIPT), str(emu), str(ep), "--skip", "0", "--csv", str(tmp_path / "j.csv")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    got = {" ".join(l.split()[:-3]): float(l.split()[-3]) for l in p.stdout.splitlines()[1:]}  # name: p50
    assert got == {"to emulator": 10.0, "to timeslot": 2.0, "emulated": 3.6, "to comm core": 1.0, "comm core": 5.0,
                   "to endpoint": 8.4, "round trip": 30.0, "machinery": 26.4}
    assert "(n = 40)" in p.stdout
    rows = list(csv.DictReader(open(tmp_path / "j.csv")))
    assert len(rows) == 40
    for r in rows:
        parts = sum(float(r[k]) for k in ("to emulator", "to timeslot", "emulated", "to comm core", "comm core",
                                           "to endpoint"))
        assert abs(parts - float(r["round trip"])) < 1e-6


def test_missing_trace_is_named(tmp_path):
    emu, ep = write(tmp_path)
    (ep / "requests.csv").unlink()
    p = subprocess.run([sys.executable, str(SCRIPT), str(emu), str(ep)], capture_output=True, text=True, timeout=60)
    assert p.returncode != 0 and "requests.csv" in p.stderr and "--trace-stages" in p.stderr


def test_nfqueue_endpoint_adds_hold_and_release(tmp_path):
    emu, ep = write(tmp_path)
    rows = list(csv.DictReader(open(ep / "requests.csv")))
    with open(ep / "requests.csv", "w") as f:  # the NFQUEUE endpoint's columns: read 4 us before, released 3 us after
        f.write("flow,seq,sent_ns,verdict_ns,action,held_ns,released_ns\n")
        for r in rows:
            if r["verdict_ns"]:
                f.write(f"{r['flow']},{r['seq']},{r['sent_ns']},{r['verdict_ns']},release,"
                        f"{int(r['sent_ns']) - 4000},{int(r['verdict_ns']) + 3000}\n")
    p = subprocess.run([sys.executable, str(SCRIPT), str(emu), str(ep), "--skip", "0"], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    got = {" ".join(l.split()[:-3]): float(l.split()[-3]) for l in p.stdout.splitlines()[1:]}
    assert got["hold"] == 4.0 and got["release"] == 3.0 and got["held"] == 37.0 and got["round trip"] == 30.0
