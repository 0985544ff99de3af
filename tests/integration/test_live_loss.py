"""(c) 5% and 20% of the protocol's datagrams lost in each direction (real
loss: nftables `numgen random` rules in every endpoint namespace, so the
emulator's datagrams are lost too): nothing is lost or duplicated."""
from __future__ import annotations

from collections import Counter

import pytest

from live_harness import assert_exactly_once, read_counters, read_csv


@pytest.mark.parametrize("percent", [5, 20])
def test_control_packet_loss(live_run, percent):
    for ns in live_run.net.eps:
        live_run.net.add_loss(ns, percent)
    live_run.start_emulator("af_packet", max_s=120)
    live_run.start_endpoints(limit_s=60)
    codes = live_run.wait_endpoints(timeout=90)
    assert codes == [0, 0, 0, 0], f"endpoint exit codes {codes}\n{live_run.endpoint_logs()}"
    assert live_run.stop_emulator() == 0, live_run.emu_log.read_text()

    total = assert_exactly_once(live_run)
    lost = {ns: live_run.net.loss_counters(ns) for ns in live_run.net.eps}
    assert all(c.get("out", 0) > 0 and c.get("in", 0) > 0 for c in lost.values()), lost
    ctr = live_run.endpoint_counters()
    assert sum(c["retransmissions"] for c in ctr.values()) > 0, ctr
    for c in ctr.values():
        assert c["outstanding"] == 0 and c["verdict_unexpected"] == 0

    # Without a restart the engine sees every request exactly once.
    live = read_csv(live_run.emu_out / "verdicts.csv")
    keyed = Counter((int(v["src"]), int(v["flow"]), int(v["seq"])) for v in live)
    assert len(keyed) == total and max(keyed.values()) == 1
    cc = read_counters(live_run.emu_out / "comm_counters.csv")
    assert cc["requests"] == total
    assert cc["proto_request_dups"] + cc["proto_verdicts_resent"] > 0, cc
