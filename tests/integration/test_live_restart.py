"""(d) the emulator is killed (SIGKILL) mid-run and restarted: endpoints
re-join (RESET, then HELLO / WELCOME of a new session), none hangs, and every
request is still delivered exactly one verdict at its endpoint. Requests that
were inside the killed emulator's engine are emulated again by the new one
(docs/protocol.md section 9): what is asserted is exactly-once delivery to the
endpoint's user, and exactly-once emulation within one emulator incarnation."""
from __future__ import annotations

import time
from collections import Counter

from live_harness import LiveRun, assert_exactly_once, read_counters, read_csv


def test_emulator_restart(live_net, bin_dir, tmp_path):
    run = LiveRun(live_net, bin_dir, tmp_path, duration_ms=1500)
    try:
        run.start_emulator("af_packet")
        run.start_endpoints(start_in_s=0.3, limit_s=60)
        time.sleep(0.9)  # 0.6 s into the 1.5 s workload
        assert all(p.poll() is None for p in run.eps), "endpoints finished before the restart:\n" + run.endpoint_logs()
        run.kill_emulator()
        time.sleep(0.3)
        run.start_emulator("af_packet")
        codes = run.wait_endpoints(timeout=90)
        assert codes == [0, 0, 0, 0], f"endpoint exit codes {codes}\n{run.endpoint_logs()}"
        assert run.stop_emulator() == 0, run.emu_log.read_text()

        total = assert_exactly_once(run)
        ctr = run.endpoint_counters()
        for i, c in ctr.items():
            assert c["outstanding"] == 0 and c["verdict_unexpected"] == 0, (i, c)
            assert c["resets"] >= 1 and c["sessions"] >= 2, f"endpoint {i} did not re-join: {c}"

        # The second emulator saw each request at most once, and only some of them.
        live = read_csv(run.emu_out / "verdicts.csv")
        keyed = Counter((int(v["src"]), int(v["flow"]), int(v["seq"])) for v in live)
        assert keyed and max(keyed.values()) == 1
        assert 0 < len(keyed) < total
        cc = read_counters(run.emu_out / "comm_counters.csv")
        assert cc["proto_resets_sent"] >= 4, cc
        assert cc["proto_sessions"] >= 4, cc
    finally:
        run.cleanup()
