"""(a) every abstract packet gets exactly one verdict, and (b) the live
verdicts equal a virtual-time replay of the arrivals the emulator recorded;
over net_af_packet and net_af_xdp."""
from __future__ import annotations

import subprocess
from collections import Counter

import pytest

from live_harness import assert_exactly_once, read_counters, read_csv

VERDICT_COLUMNS = ["timeslot", "action", "reason", "src", "dst", "flow", "seq"]


@pytest.mark.parametrize("vdev", ["af_packet", "af_xdp"])
def test_exactly_once_and_replay(live_run, vdev):
    live_run.start_emulator(vdev)
    live_run.start_endpoints(limit_s=40)
    codes = live_run.wait_endpoints(timeout=60)
    assert codes == [0, 0, 0, 0], f"endpoint exit codes {codes}\n{live_run.endpoint_logs()}"
    assert live_run.stop_emulator() == 0, live_run.emu_log.read_text()

    # (a) at the endpoints: exactly one verdict per requested packet
    total = assert_exactly_once(live_run)
    assert total > 1000
    ctr = live_run.endpoint_counters()
    for i, c in ctr.items():
        assert c["outstanding"] == 0 and c["verdict_unexpected"] == 0, (i, c)
        assert c["requests"] == c["verdicts"] == c["verdicts_release"] + c["verdicts_mark"] + c["verdicts_drop"]
    actions = Counter(v["action"] for vs in live_run.endpoint_verdicts().values() for v in vs)
    assert actions["release"] and actions["mark"] and actions["drop"], actions  # the config exercises all three

    # ... and at the emulator: each request entered the engine exactly once
    emu = live_run.emu_out
    live = read_csv(emu / "verdicts.csv")
    assert list(live[0].keys()) == VERDICT_COLUMNS
    keyed = Counter((int(v["src"]), int(v["flow"]), int(v["seq"])) for v in live)
    assert max(keyed.values()) == 1
    assert len(keyed) == total
    # the endpoint applied the action the emulator decided
    by_key = {(int(v["src"]), int(v["flow"]), int(v["seq"])): v["action"] for v in live}
    for i, vs in live_run.endpoint_verdicts().items():
        for v in vs:
            assert by_key[(i, int(v["flow"]), int(v["seq"]))] == v["action"]
    cc = read_counters(emu / "comm_counters.csv")
    assert cc["requests"] == total and cc["verdicts_pushed"] == total

    # (b) virtual-time replay of the recorded arrivals gives the same verdicts
    rdir = live_run.dir / "replay"
    p = subprocess.run([str(live_run.bin / "flexplane-emulator"), "replay", str(live_run.config),
                        "--arrivals", str(emu / "arrivals.csv"), "--out", str(rdir)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    replay = (rdir / "verdicts.csv").read_text().splitlines()
    recorded = (emu / "verdicts.csv").read_text().splitlines()
    diff = [(a, b) for a, b in zip(recorded, replay) if a != b]
    assert len(replay) == len(recorded) and not diff, f"{len(recorded)} vs {len(replay)} lines; first diffs {diff[:5]}"
