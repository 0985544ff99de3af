"""flexplane-nfq-endpoint on real packets from the kernel: every packet a
host sends is held in the fabric's NFQUEUE until the live emulator decides,
then released, released with ECN CE (checked by a real receiver: the kernel
delivers it, so its checksums are right, and a capture recomputes the IPv4
header checksum), or dropped; control traffic and bypass rules are never
held; an unreachable emulator is reported and its packets get the fallback."""
from __future__ import annotations

import time

import pytest

from flexlab.backends.base import host_ip, host_ip6
from nfq_harness import NfqLab

PORT = 6000


@pytest.fixture
def lab(tmp_path, lab_bins, prefix):
    labs = []

    def make(**kw) -> NfqLab:
        lab = NfqLab(tmp_path, lab_bins, prefix, **kw)
        labs.append(lab)
        return lab

    yield make
    for lab in labs:
        lab.down()


def test_release_and_bypass(lab):
    # A roomy DropTail: every held packet is released. udp:6001 is bypassed.
    l = lab(bypass=["udp:6001"]).up({"scheme": "droptail"})
    rx = l.receive(1, PORT, seconds=4)
    l.send(0, host_ip(1), PORT, count=30, tos=0)
    l.send(0, host_ip(1), PORT + 1, count=5, tos=0, first_seq=100)  # bypassed (no listener there)
    got = l.collect(rx)
    assert sorted(d["seq"] for d in got["received"]) == list(range(30))
    assert all(d["tos"] == 0 for d in got["received"])
    assert all(f["ip_checksum_ok"] for f in got["frames"]) and len(got["frames"]) == 30
    ep = l.stop_endpoints()
    emu = l.stop_emulator()
    assert ep[0]["packets_held"] == 30
    assert ep[0]["packets_released"] == 30
    assert ep[0]["bypass_rule"] == 5
    assert ep[0]["bypass_protocol"] == 0  # the fabric's rule keeps protocol datagrams out of the queue
    # The emulator saw exactly the held packets' requests and answered each once.
    held = sum(e["requests_submitted"] for e in ep)
    assert emu["requests"] == held == sum(e["verdicts"] for e in ep) == emu["verdicts_pushed"]
    assert emu["releases"] == held


@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_ce_mark_reaches_a_real_receiver_with_correct_checksums(lab, v6):
    # HULL with a 0-byte threshold marks every ECN-capable packet and queues
    # the others unmarked.
    l = lab(ipv6=v6).up({"scheme": "hull", "queue_manager": {"mark_threshold_bytes": 0}})
    dst = host_ip6(1) if v6 else host_ip(1)
    rx = l.receive(1, PORT, seconds=5, v6=v6)
    ef = 46 << 2
    l.send(0, dst, PORT, count=20, tos=ef | 2, first_seq=0)    # ECT(0)
    l.send(0, dst, PORT, count=20, tos=ef | 1, first_seq=100)  # ECT(1)
    l.send(0, dst, PORT, count=20, tos=ef, first_seq=200)      # Not-ECT
    got = l.collect(rx)
    by_seq = {d["seq"]: d["tos"] for d in got["received"]}
    assert sorted(by_seq) == list(range(20)) + list(range(100, 120)) + list(range(200, 220))
    for seq, tos in by_seq.items():
        assert tos >> 2 == 46, f"DSCP changed on {seq}"
        assert tos & 3 == (0 if seq >= 200 else 3), f"datagram {seq} arrived with ECN {tos & 3}"
    assert len(got["frames"]) == 60
    assert all(f["ip_checksum_ok"] for f in got["frames"])
    snmp = got["snmp"]
    assert snmp.get("Ip.InHdrErrors", 0) == 0 and snmp.get("Udp.InCsumErrors", 0) == 0
    assert snmp.get("Udp6InCsumErrors", 0) == 0
    ep = l.stop_endpoints()
    emu = l.stop_emulator()
    assert ep[0]["packets_marked"] == 40
    assert ep[0]["packets_released"] == 20 + (ep[0]["packets_held"] - 60)  # + any IPv6 control that was held
    assert emu["marks"] == 40


def test_drop(lab):
    # 1.2 ms timeslots and a 2-packet emulated NIC queue: a burst overflows it.
    l = lab().up({"scheme": "droptail"}, link_gbps=0.01, live={"endpoint_queue_pkts": 2})
    rx = l.receive(1, PORT, seconds=4)
    l.send(0, host_ip(1), PORT, count=40, gap_ms=0, size=1200)
    got = l.collect(rx)
    ep = l.stop_endpoints()
    emu = l.stop_emulator()
    assert ep[0]["packets_held"] == 40
    assert 0 < ep[0]["packets_dropped"] < 40
    assert len(got["received"]) == ep[0]["packets_released"] == 40 - ep[0]["packets_dropped"]
    assert emu["drops"] == ep[0]["packets_dropped"]
    assert emu["drop_endpoint_overflow"] == ep[0]["packets_dropped"]


@pytest.mark.parametrize("fallback", ["closed", "open"])
def test_unreachable_emulator_is_reported_and_packets_get_the_fallback(lab, fallback):
    l = lab(fallback=fallback, hold_ms=400).up({"scheme": "droptail"}, emulator=False, endpoints=False)
    ep0 = l.start_endpoint(0, ["--connect-timeout-s", "0.5"])
    ep1 = l.start_endpoint(1, ["--connect-timeout-s", "0.5"])
    l.procs.wait_for(ep0, "cannot reach the emulator", 10, "the unreachable report")
    assert "no session after" in ep0.log_text()
    rx = l.receive(1, PORT, seconds=3)
    t0 = time.time()
    l.send(0, host_ip(1), PORT, count=5)
    got = l.collect(rx)
    assert time.time() - t0 < 10  # nothing hangs
    ep = l.stop_endpoints()
    assert ep[0]["packets_held"] == 5
    if fallback == "closed":
        assert got["received"] == []
        assert ep[0]["timeout_dropped"] == 5
    else:
        assert sorted(d["seq"] for d in got["received"]) == list(range(5))
        assert ep[0]["timeout_accepted"] == 5
    assert ep[0]["sessions"] == 0 and ep[0]["hellos_sent"] > 0
    assert ep1.popen.returncode == 0
