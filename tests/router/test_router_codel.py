"""CoDel (RFC 8289) on real packets: the emulator's `codel` queue manager,
unchanged, dropping (or CE-marking) at dequeue by sojourn time measured in
ns on a paced port.

200 frames of 1500 bytes reach a 10 Mbit/s port at once (net_pcap replays
them as fast as it can), so the head's sojourn time is the time since the
first departure (plus however long the first frame waited for the port to
start). It passes target (5 ms) within a few departures; CoDel drops the
head once it has stayed above target for an interval (100 ms), i.e. between
100 and about 106 ms after the first departure, then interval / sqrt(count)
after each drop: 100, 70.7, 57.7, 50 ms, ... The times are checked on the
output pcap's transmit timestamps (a drop happens in the dequeue that sends
the next packet), not on packet indices: on a loaded machine the port may
send below line rate. The first frame's stamp can be late by milliseconds
(the pcap file's first write), so the origin is the least-late of the first
five frames on the line-rate schedule, as in test_router_pcap."""
from __future__ import annotations

from pathlib import Path

from harness import numbered_udp, ports_config, rows, run_router, seq_of
from test_router_pcap import check_invariants

ROUTES = "10.9.0.0/16 port 1 mac 02:00:00:00:09:01\n"
RUN = "run: {stop_when_idle_ms: 300, stats_interval_s: 0, burst: 64, occupancy_interval_us: 2000}"
N = 200


def check_control_law(out, signalled: list[int]) -> None:
    """`signalled`: the sequence numbers CoDel dropped or marked, in order."""
    per_frame = (1500 + 24) * 8 / 10e6  # 1500-byte frames + wire overhead at 10 Mbit/s
    t0 = min(out[k].ts - k * per_frame for k in range(5))
    when = {}  # seq -> time (ms after the first departure) of the dequeue that signalled it
    for f in out:
        for s in signalled:
            if s not in when and seq_of(f) >= s:
                when[s] = (f.ts - t0) * 1e3
    times = [when[s] for s in signalled if s in when]
    # Never before an interval after the first dequeue (1 ms of stamp slack);
    # about target + interval on an idle machine, later on a loaded one.
    assert 99 <= times[0] <= 130, times
    for count, (a, b) in enumerate(zip(times, times[1:]), start=1):
        assert abs((b - a) - 100 / count ** 0.5) <= 10, times  # interval / sqrt(count)


def frames(tos: int = 0) -> list[bytes]:
    return [numbered_udp(i, "10.9.0.1", size=1500, tos=tos) for i in range(N)]


def config(qm: str) -> str:
    return f"router: {{scheme: codel, queue_manager: {{{qm}}}}}\n{ports_config(2, {1: 'rate_mbps: 10'})}\n{RUN}"


def test_codel_drops_at_dequeue_after_an_interval_above_target(tmp_path: Path) -> None:
    r = run_router(tmp_path, config("target_us: 5000, interval_ms: 100"), ROUTES, {0: frames()}, timeout=60)
    assert r.rc == 0, r.stderr
    sent = [seq_of(f) for f in r.out[1]]
    assert sent == sorted(sent)  # FIFO, nothing reordered
    dropped = sorted(set(range(N)) - set(sent))
    q = r.queue(1)
    assert q["arrived"] == N and q["dropped_on_arrival"] == 0 and q["evicted"] == 0
    assert q["dropped_at_dequeue"] == len(dropped) == q["drops_sojourn_time"]
    assert len(dropped) >= 2, dropped
    check_control_law(r.out[1], dropped)
    assert all(f.ip_checksum_ok and f.ttl == 63 for f in r.out[1])
    assert r.meta["ports"][1]["ns_per_tick"] == 1
    # CoDel's own state beside the occupancy (scheme_stats.csv): the sojourn
    # time it saw grows to ~the whole backlog's transmission time, and it was
    # in the dropping state.
    stats = [row for row in rows(r.dir / "scheme_stats.csv") if row["port"] == "1"]
    sojourn = [float(row["value"]) for row in stats if row["stat"] == "codel_sojourn_us"]
    assert sojourn and max(sojourn) > 150_000, max(sojourn, default=None)
    assert any(row["stat"] == "codel_dropping" and float(row["value"]) == 1 for row in stats)
    check_invariants(r)


def test_codel_with_ecn_marks_the_head_instead(tmp_path: Path) -> None:
    """ecn: true and ECT(0) frames: the same packets CE-marked (in the real
    header, checksum fixed) instead of dropped; none lost."""
    r = run_router(tmp_path, config("target_us: 5000, interval_ms: 100, ecn: true"), ROUTES,
                   {0: frames(tos=0x02)}, timeout=60)
    assert r.rc == 0, r.stderr
    out = r.out[1]
    assert [seq_of(f) for f in out] == list(range(N))
    ce = [seq_of(f) for f in out if f.ecn == 3]
    q = r.queue(1)
    assert q["dropped_at_dequeue"] == 0 and q["marked"] == len(ce) == q["marks_sojourn_time"]
    assert len(ce) >= 2, ce
    check_control_law(out, ce)
    assert all(f.ip_checksum_ok for f in out)
    check_invariants(r)
