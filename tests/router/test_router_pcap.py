"""flexplane-router end to end on pcap files (net_pcap): frames in, frames out,
checked byte by byte against an independent packet builder (pkt.py).

All N test frames of a case fit in one RX burst (burst 64), so every one of
them reaches the scheme before the first departure: the queue length an
arrival sees is exactly the number of earlier arrivals accepted, and marks
and drops are exact."""
from __future__ import annotations

import struct
import subprocess
from pathlib import Path

import pytest

import pkt
from harness import HOST_MAC, PORT_MAC, find_bin, numbered_udp, ports_config, run_router, seq_of

RUN = "run: {stop_when_idle_ms: 300, stats_interval_s: 0, burst: 64}"


def check_forwarded(f: pkt.Frame, out_port: int, next_hop_mac: str, ttl: int = 63) -> None:
    assert f.src == PORT_MAC[out_port]
    assert f.dst == next_hop_mac
    assert f.ttl == ttl
    assert f.ip_checksum_ok


def check_invariants(r) -> None:
    for row in r.counters:
        c = {k: int(v) for k, v in row.items() if k != "router"}
        assert c["arrived"] == c["enqueued"] + c["dropped_on_arrival"]
        assert c["enqueued"] == c["dequeued"] + c["dropped_at_dequeue"] + c["evicted"] + c["backlog_pkts"]
        assert c["dropped_on_arrival"] + c["dropped_at_dequeue"] + c["evicted"] == \
            sum(v for k, v in c.items() if k.startswith("drops_"))
        assert c["marked"] == sum(v for k, v in c.items() if k.startswith("marks_"))


def test_help_and_check(tmp_path: Path) -> None:
    r = subprocess.run([str(find_bin()), "--help"], capture_output=True, text=True)
    assert r.returncode == 0
    assert "EAL" in r.stdout and "--duration-s" in r.stdout and "SIGHUP" in r.stdout
    cfg = tmp_path / "r.yaml"
    # The gateway lies in port 0's subnet (without that address the start, and so --check, refuses it).
    cfg.write_text("router: {scheme: dctcp, queue_manager: {k_pkts: 5}}\nports: {0: {ip: 10.1.0.1/24}}\n"
                   "routes: routes.txt\n")
    (tmp_path / "routes.txt").write_text("10.9.0.0/16 via 10.1.0.2\n")
    r = subprocess.run([str(find_bin()), str(cfg), "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    (tmp_path / "routes.txt").write_text("10.9.0.0/16 via 10.1.0.2\n10.8.0.0/16 via 300.1.0.2\n")
    r = subprocess.run([str(find_bin()), str(cfg), "--check"], capture_output=True, text=True)
    assert r.returncode == 2
    assert "routes.txt:2: via: '300.1.0.2' is not an IPv4 address" in r.stderr
    cfg.write_text("router: {scheme: dctcp, queue_manager: {k_packets: 5}}\n")
    r = subprocess.run([str(find_bin()), str(cfg), "--check"], capture_output=True, text=True)
    assert r.returncode == 2
    # The place is the misspelled key itself (issue 21).
    assert "r.yaml:1:41: router.queue_manager.k_packets (queue_manager 'dctcp'): unknown parameter 'k_packets'" \
        in r.stderr
    assert subprocess.run([str(find_bin())], capture_output=True, text=True).returncode != 0


def test_lpm_forwarding_ttl_checksum_and_macs(tmp_path: Path) -> None:
    routes = f"""
10.9.0.0/16   port 1 mac 02:00:00:00:09:01
10.9.5.0/24   port 2 mac 02:00:00:00:09:02    # longer prefix wins
10.9.5.128/25 via 10.2.0.7 mac 02:00:00:00:09:03
0.0.0.0/0     via 10.3.0.254 mac 02:00:00:00:09:04
neighbor 10.2.0.9 mac 02:00:00:00:09:05
"""
    cases = [  # destination, output port, next-hop MAC
        ("10.9.1.1", 1, "02:00:00:00:09:01"),
        ("10.9.5.1", 2, "02:00:00:00:09:02"),
        ("10.9.5.200", 1, "02:00:00:00:09:03"),
        ("192.0.2.1", 2, "02:00:00:00:09:04"),
        ("10.2.0.9", 1, "02:00:00:00:09:05"),  # static neighbour on port 1's subnet
    ]
    frames = [numbered_udp(i, dst, tos=0x28, size=100 + i) for i, (dst, _, _) in enumerate(cases * 4)]
    r = run_router(tmp_path, f"router: {{scheme: droptail}}\n{ports_config(3)}\n{RUN}", routes, {0: frames},
                   num_ports=3)
    assert r.rc == 0, r.stderr
    expect: dict[int, list[int]] = {0: [], 1: [], 2: []}
    for i, (_, port, _) in enumerate(cases * 4):
        expect[port].append(i)
    for port in (0, 1, 2):
        got = r.out.get(port, [])
        assert [seq_of(f) for f in got] == expect[port]  # FIFO per port, nothing lost or extra
        for f in got:
            i = seq_of(f)
            dst, _, mac = (cases * 4)[i]
            original = pkt.Frame(frames[i])
            check_forwarded(f, port, mac)
            assert f.ip_dst == dst and f.ip_src == "10.1.0.2"
            assert f.tos == 0x28
            assert len(f.raw) == len(frames[i])
            assert f.l4 == original.l4  # payload untouched
    fp = r.meta["fast_path"]
    assert fp["rx_packets"] == 20 and fp["forwarded"] == 20
    assert sum(fp["exceptions"].values()) == 0
    assert sum(fp["drops"].values()) == 0
    check_invariants(r)


def test_droptail_keeps_the_first_capacity_packets(tmp_path: Path) -> None:
    routes = "10.9.0.0/16 port 1 mac 02:00:00:00:09:01\n"
    frames = [numbered_udp(i, "10.9.0.1") for i in range(30)]
    cfg = f"router: {{scheme: droptail, queue_manager: {{capacity_pkts: 10}}}}\n{ports_config()}\n{RUN}"
    r = run_router(tmp_path, cfg, routes, {0: frames})
    assert r.rc == 0, r.stderr
    assert [seq_of(f) for f in r.out[1]] == list(range(10))
    q = r.queue(1)
    assert q["arrived"] == 30 and q["dequeued"] == 10 and q["drops_queue_full"] == 20 and q["marked"] == 0
    assert all(f.ecn == 0 for f in r.out[1])
    check_invariants(r)


def test_dctcp_marks_exactly_above_k_in_the_real_header(tmp_path: Path) -> None:
    """K = 5: the arrival that finds 6+ packets queued is marked (if ECT) or
    queued unmarked (Not-ECT, drop_non_ect false); capacity 20 tail-drops."""
    routes = "10.9.0.0/16 port 1 mac 02:00:00:00:09:01\n"
    tos = [0xB8 | (2 if i % 3 else 0) for i in range(30)]  # DSCP EF; every third packet Not-ECT
    tos[7] = 0xB8 | 1   # ECT(1)
    tos[8] = 0xB8 | 3   # already CE: stays CE, not counted as a new mark
    frames = [numbered_udp(i, "10.9.0.1", tos=tos[i]) for i in range(30)]
    cfg = f"router: {{scheme: dctcp, queue_manager: {{k_pkts: 5, capacity_pkts: 20}}}}\n{ports_config()}\n{RUN}"
    r = run_router(tmp_path, cfg, routes, {0: frames})
    assert r.rc == 0, r.stderr
    out = r.out[1]
    assert [seq_of(f) for f in out] == list(range(20))
    expected_marks = 0
    for f in out:
        i = seq_of(f)
        ect = tos[i] & 3 != 0
        should_be_ce = (i > 5 and ect) or tos[i] & 3 == 3
        assert f.ecn == (3 if should_be_ce else tos[i] & 3), i
        assert f.tos >> 2 == 0xB8 >> 2  # DSCP untouched
        assert f.ip_checksum_ok  # the checksum follows both the TTL and the CE change
        assert f.ttl == 63
        expected_marks += i > 5 and ect and tos[i] & 3 != 3
    q = r.queue(1)
    assert q["marked"] == expected_marks == q["marks_above_threshold"]
    assert q["drops_queue_full"] == 10
    check_invariants(r)


def test_red_marks_ect_and_drops_not_ect(tmp_path: Path) -> None:
    """RED with weight 1 (average = queue length), min 10, max 20, ECN on: the
    queue grows to exactly 20 packets, then every arrival is a forced drop.
    Between 10 and 20, ECT packets are CE-marked (never dropped) and Not-ECT
    ones early-dropped, at random; the pcap must agree with the counters."""
    routes = "10.9.0.0/16 port 1 mac 02:00:00:00:09:01\n"
    cfg = (f"router: {{scheme: red, queue_manager: {{weight: 1, min_th_pkts: 10, max_th_pkts: 20, max_p: 0.5, "
           f"ecn: true, capacity_pkts: 1000}}}}\nseed: 5\n{ports_config()}\n{RUN}")
    for name, ecn in (("ect", 2), ("not_ect", 0)):
        frames = [numbered_udp(i, "10.9.0.1", tos=ecn) for i in range(60)]
        r = run_router(tmp_path / name, cfg, routes, {0: frames})
        assert r.rc == 0, r.stderr
        out = r.out[1]
        q = r.queue(1)
        assert len(out) == 20 == q["dequeued"]
        assert [seq_of(f) for f in out][:10] == list(range(10))  # below min_th: all accepted, unmarked
        assert all(f.ecn == ecn for f in out[:10])
        marked = [seq_of(f) for f in out if f.ecn == 3]
        assert len(marked) == q["marked"] == q["marks_aqm_early"]
        if ecn:
            assert [seq_of(f) for f in out] == list(range(20))  # marked, not dropped
            assert q["drops_aqm_early"] == 0 and len(marked) > 0
            assert q["drops_aqm_forced"] == 40
        else:
            assert not marked
            assert q["drops_aqm_early"] > 0
            assert q["drops_aqm_early"] + q["drops_aqm_forced"] == 40
        assert all(f.ip_checksum_ok for f in out)
        check_invariants(r)


def test_drr_serves_sources_in_turn_and_fairly_in_bytes(tmp_path: Path) -> None:
    """by_source classifier: queue = low bits of the IPv4 source; DRR with a
    1000-byte quantum. Equal 1000 B packets alternate; 1000 B vs 500 B
    packets share bytes, not packets."""
    routes = "10.9.0.0/16 port 1 mac 02:00:00:00:09:01\n"
    cfg = (f"router: {{classifier: {{name: by_source, num_queues: 8}}, queue_manager: droptail, "
           f"scheduler: {{name: drr, quantum_bytes: 1000}}}}\n{ports_config()}\n{RUN}")
    a = [numbered_udp(i, "10.9.0.1", src="10.1.0.2", size=1000) for i in range(20)]
    b = [numbered_udp(100 + i, "10.9.0.1", src="10.1.0.3", size=1000) for i in range(20)]
    r = run_router(tmp_path / "equal", cfg, routes, {0: a + b})
    assert r.rc == 0, r.stderr
    order = [seq_of(f) for f in r.out[1]]
    assert order == [x for pair in zip(range(20), range(100, 120)) for x in pair]
    # Unequal sizes: A's 1000 B packets against B's 500 B ones.
    b = [numbered_udp(100 + i, "10.9.0.1", src="10.1.0.3", size=500) for i in range(40)]
    r = run_router(tmp_path / "bytes", cfg, routes, {0: a[:20] + b})
    assert r.rc == 0, r.stderr
    out = r.out[1]
    assert len(out) == 60
    head = out[:30]  # both queues backlogged throughout this prefix
    bytes_a = sum(len(f.raw) for f in head if seq_of(f) < 100)
    bytes_b = sum(len(f.raw) for f in head if seq_of(f) >= 100)
    assert abs(bytes_a - bytes_b) <= 1000, (bytes_a, bytes_b)
    assert r.queue(1, 2)["arrived"] == 20 and r.queue(1, 3)["arrived"] == 40
    check_invariants(r)


def test_port_is_paced_at_its_line_rate_in_bytes(tmp_path: Path) -> None:
    """10 Mbit/s, 1000-byte frames + 24 bytes of wire overhead: 819.2 us per
    frame. The router may never send faster than that, with at most
    pacing_slack_us (20) of catch-up; the upper bound is loose (shared CI
    machines).

    The output pcap's timestamps are taken by the pcap driver a little after
    the router's decision to send: usually a microsecond, but the first
    frame's write (the file's first page) or a preempted one can stamp tens of
    microseconds late, and the schedule does not move with a late stamp (a
    late frame is followed by a short gap). So the schedule's origin is the
    least-late of the first five frames, not frame 0 alone."""
    routes = "10.9.0.0/16 port 1 mac 02:00:00:00:09:01\n"
    cfg = (f"router: {{scheme: droptail}}\n{ports_config(2, {1: 'rate_mbps: 10'})}\n"
           "run: {stop_when_idle_ms: 300, stats_interval_s: 0, burst: 64, occupancy_interval_us: 1000}")
    n = 40
    frames = [numbered_udp(i, "10.9.0.1", size=1000) for i in range(n)]
    r = run_router(tmp_path, cfg, routes, {0: frames})
    assert r.rc == 0, r.stderr
    out = r.out[1]
    assert [seq_of(f) for f in out] == list(range(n))
    per_frame = (1000 + 24) * 8 / 10e6
    origin = min(out[k].ts - k * per_frame for k in range(5))
    span = out[-1].ts - origin
    assert span >= (n - 1) * per_frame - 20e-6 - 2e-6, [f.ts for f in out]
    assert span <= 3 * n * per_frame, span
    gaps = sorted(b.ts - a.ts for a, b in zip(out, out[1:]))
    assert gaps[len(gaps) // 2] >= 0.995 * per_frame, gaps  # never faster (a busy machine may be slower)
    # The queue built at the port and drained at line rate: the occupancy
    # samples start near n and fall by about one packet per 819 us.
    occ = [row for row in pkt_rows(r.dir / "occupancy.csv") if int(row["port"]) == 1]
    peak = max(int(row["packets"]) for row in occ)
    assert peak >= n - 3
    md = r.meta["ports"][1]
    assert md["rate_mbps"] == 10 and md["ns_per_tick"] == 1  # schemes see time in ns (api/time.h)


def pkt_rows(path: Path) -> list[dict[str, str]]:
    import csv
    with path.open() as f:
        return list(csv.DictReader(f))


def test_malformed_and_exceptional_packets_rfc1812(tmp_path: Path) -> None:
    """Each malformed frame is counted under its reason and dropped; exceptions
    get their RFC answer; the router never crashes and forwards the rest."""
    routes = "10.9.0.0/16 port 1 mac 02:00:00:00:09:01\n"
    cfg = f"router: {{scheme: droptail}}\n{ports_config(2, {1: 'mtu_bytes: 576'})}\n{RUN}"
    R, H = PORT_MAC[0], HOST_MAC[0]
    good = lambda seq, **kw: numbered_udp(seq, "10.9.0.1", **kw)  # noqa: E731

    def raw_ip(header: bytes, payload: bytes = bytes(20)) -> bytes:
        return pkt.eth(R, H, pkt.ETH_IPV4, header + payload)

    ok_hdr = pkt.ipv4_header("10.1.0.2", "10.9.0.1", 17, 20)
    nop_options = bytes([1, 1, 1, 0])
    lsrr = bytes([131, 3, 4, 0])
    bad_opt = bytes([7, 9, 4, 0])  # record route claiming 9 bytes in a 4-byte option area
    frames = {
        "runt": bytes(10),
        "short_ip": pkt.eth(R, H, pkt.ETH_IPV4, bytes(10)),
        "bad_version": raw_ip(pkt.ipv4_header("10.1.0.2", "10.9.0.1", 17, 20, version=6)),
        "ihl_4": raw_ip(pkt.ipv4_header("10.1.0.2", "10.9.0.1", 17, 20, ihl=4)),
        "ihl_past_frame": pkt.eth(R, H, pkt.ETH_IPV4, pkt.ipv4_header("10.1.0.2", "10.9.0.1", 17, 0, ihl=15)),
        "total_too_long": raw_ip(pkt.ipv4_header("10.1.0.2", "10.9.0.1", 17, 20, total_length=400)),
        "total_too_short": raw_ip(pkt.ipv4_header("10.1.0.2", "10.9.0.1", 17, 20, total_length=12)),
        "bad_checksum": raw_ip(pkt.ipv4_header("10.1.0.2", "10.9.0.1", 17, 20, bad_checksum=True)),
        "martian_src": raw_ip(pkt.ipv4_header("127.0.0.1", "10.9.0.1", 17, 20)),
        "multicast_dst": raw_ip(pkt.ipv4_header("10.1.0.2", "239.1.1.1", 17, 20)),
        "broadcast_dst": raw_ip(pkt.ipv4_header("10.1.0.2", "255.255.255.255", 17, 20)),
        "not_our_mac": pkt.eth("02:00:00:00:ee:ee", H, pkt.ETH_IPV4, ok_hdr + bytes(20)),
        "ipv6": pkt.eth(R, H, pkt.ETH_IPV6, bytes(60)),
        "vlan": pkt.eth(R, H, 0x8100, bytes(60)),
        "options_nop": good(1001, options=nop_options),
        "options_lsrr": good(1002, options=lsrr),
        "options_bad": good(1003, options=bad_opt),
        "fragment_first": good(1004, flags_frag=0x2000),
        "fragment_later": good(1005, flags_frag=0x0010),
        "ttl_1": good(1006, ttl=1),
        "ttl_0": good(1007, ttl=0),
        "no_route": numbered_udp(1008, "198.51.100.1"),
        "too_big_df": good(1009, size=1000, flags_frag=0x4000),
        "too_big_no_df": good(1010, size=1000),
        "blackhole_free_ok": good(1011),
        "echo": pkt.icmp_echo(R, H, "10.1.0.2", "10.1.0.1"),
        "echo_bcast": pkt.icmp_echo(R, H, "10.1.0.2", "10.1.0.255"),
        "udp_to_router": numbered_udp(1012, "10.1.0.1"),
        "arp_for_router": pkt.arp("ff:ff:ff:ff:ff:ff", H, 1, H, "10.1.0.2", "00:00:00:00:00:00", "10.1.0.1"),
        "arp_other": pkt.arp("ff:ff:ff:ff:ff:ff", H, 1, H, "10.1.0.2", "00:00:00:00:00:00", "10.1.0.77"),
        "arp_short": pkt.eth("ff:ff:ff:ff:ff:ff", H, pkt.ETH_ARP, bytes(10)),
    }
    r = run_router(tmp_path, cfg, routes, {0: list(frames.values())})
    assert r.rc == 0, r.stderr
    fp, sp = r.meta["fast_path"], r.meta["slow_path"]
    assert fp["rx_packets"] == len(frames)
    assert fp["drops"]["runt_frame"] == 1
    assert fp["drops"]["not_our_mac"] == 1
    assert fp["drops"]["ipv6"] == 1 and fp["drops"]["other_ethertype"] == 1
    v = fp["ipv4"]
    assert v["too_short"] == 1
    assert v["bad_version"] == 1
    assert v["bad_header_length"] == 2
    assert v["bad_total_length"] == 2
    assert v["bad_checksum"] == 1
    assert v["martian_source"] == 1
    assert v["multicast_destination"] == 1
    assert v["martian_destination"] == 1  # 255.255.255.255
    assert v["ip_options"] == 3
    assert sp["options_forwarded"] == 1 and sp["source_route_dropped"] == 1 and sp["bad_options"] == 1
    assert fp["exceptions"]["ttl_expired"] == 2 and sp["icmp_time_exceeded"] == 2
    assert fp["exceptions"]["no_route"] == 1 and sp["icmp_unreachable"] == 1
    assert fp["exceptions"]["too_big"] == 2 and sp["icmp_frag_needed"] == 1 and sp["too_big_dropped"] == 1
    assert sp["icmp_echo_replied"] == 1
    assert sp["local_dropped"] == 2  # the broadcast ping and the UDP datagram: no services here
    assert sp["arp_replied"] == 1 and sp["arp_malformed"] == 1 and sp["arp_ignored"] >= 1
    assert fp["fragments_forwarded"] == 2

    # Forwarded on port 1: the fragments, the option packet (TTL and checksum
    # updated, options untouched) and the valid one; nothing else.
    fwd = {seq_of(f): f for f in r.out[1]}
    assert sorted(fwd) == [1001, 1004, 1005, 1011]
    for seq, f in fwd.items():
        check_forwarded(f, 1, "02:00:00:00:09:01")
    assert fwd[1001].ihl == 24 and fwd[1001].l3[20:24] == nop_options
    assert struct.unpack("!H", fwd[1005].l3[6:8])[0] == 0x0010  # fragment fields untouched

    # Answers on port 0, back to the sender's MAC from the router's.
    back = r.out[0]
    assert all(f.dst == H and f.src == R for f in back)
    icmp = [f for f in back if f.ethertype == pkt.ETH_IPV4 and f.proto == 1]
    kinds = sorted((f.l4[0], f.l4[1]) for f in icmp)
    assert kinds == [(0, 0), (3, 0), (3, 4), (11, 0), (11, 0)]
    for f in icmp:
        assert f.ip_checksum_ok and pkt.checksum(f.l4) == 0
        assert f.ip_src == "10.1.0.1" and f.ip_dst == "10.1.0.2"
        if f.l4[0] != 0:  # errors quote the offending header as received (TTL not decremented)
            quoted = pkt.Frame(b"\0" * 14 + f.l4[8:])
            assert quoted.ip_dst in ("10.9.0.1", "198.51.100.1")
            if f.l4[0] == 11:
                assert quoted.ttl in (0, 1)
            if (f.l4[0], f.l4[1]) == (3, 4):
                assert struct.unpack("!H", f.l4[6:8])[0] == 576  # next-hop MTU (RFC 1191)
    arp = [f for f in back if f.ethertype == pkt.ETH_ARP]
    assert len(arp) == 1
    a = arp[0].l3
    assert struct.unpack("!H", a[6:8])[0] == 2 and pkt.ip_str(a[14:18]) == "10.1.0.1"
    assert pkt.mac_str(a[8:14]) == R and pkt.ip_str(a[24:28]) == "10.1.0.2"
    check_invariants(r)


def test_no_route_is_counted_and_answered_even_without_a_routes_file(tmp_path: Path) -> None:
    cfg = f"router: {{scheme: droptail}}\n{ports_config()}\n{RUN}"
    r = run_router(tmp_path, cfg, "", {0: [numbered_udp(i, "10.77.0.1") for i in range(5)]})
    assert r.rc == 0, r.stderr
    assert r.meta["fast_path"]["exceptions"]["no_route"] == 5
    assert r.meta["slow_path"]["no_route_dropped"] == 5
    assert not r.out.get(1)


@pytest.mark.parametrize("scheme", ["droptail", "dctcp", "red", "drr", "drr_by_source", "hull", "pfabric", "priority_by_size", "priority_by_dscp", "round_robin", "codel", "pie", "fq_codel"])
def test_every_preset_forwards_and_keeps_its_counters_consistent(tmp_path: Path, scheme: str) -> None:
    """Light traffic through each preset (2 flows, ECT): everything arrives,
    counters balance, outputs have the emulator's columns."""
    known = subprocess.run([str(find_bin()).replace("flexplane-router", "flexplane-emulator"), "list"],
                           capture_output=True, text=True).stdout
    if scheme not in known:
        pytest.fail(f"preset {scheme} not registered (flexplane-emulator list)")
    routes = "10.9.0.0/16 port 1 mac 02:00:00:00:09:01\n"
    frames = [numbered_udp(i, "10.9.0.1", src=f"10.1.0.{2 + i % 2}", tos=2) for i in range(8)]
    r = run_router(tmp_path, f"router: {{scheme: {scheme}}}\n{ports_config()}\n{RUN}", routes, {0: frames})
    assert r.rc == 0, r.stderr
    assert sorted(seq_of(f) for f in r.out[1]) == list(range(8))
    assert r.port_totals(1)["dequeued"] == 8
    assert list(r.counters[0].keys())[:12] == ["router", "port", "queue", "arrived", "enqueued", "dequeued",
                                               "dropped_on_arrival", "dropped_at_dequeue", "evicted", "marked",
                                               "backlog_pkts", "backlog_bytes"]
    check_invariants(r)


def test_a_scheme_that_needs_endpoint_stamped_data_is_refused(tmp_path: Path) -> None:
    """LSTF reads each packet's slack from custom data that endpoints stamp;
    real packets carry none (and the mbuf travels there): a clear error."""
    r = run_router(tmp_path, f"router: {{scheme: lstf}}\n{ports_config()}\n{RUN}", "", {0: []})
    assert r.rc == 2
    assert "scheme 'lstf' reads" in r.stderr and "custom data" in r.stderr
