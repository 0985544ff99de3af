"""Malformed, truncated and forged packets for the emulator, built from raw
bytes (no scapy). Run inside an endpoint namespace:

    python inject.py udp SRC_IP [EMU_IP] [PORT]   bad protocol datagrams over a UDP socket bound to SRC_IP
    python inject.py raw IFACE EMU_MAC SRC_IP     hand-made Ethernet frames over AF_PACKET (bad IP / UDP headers,
                                                  forged source address)

Prints one JSON object: what was sent (by kind) and the message types of the
replies received.
"""
from __future__ import annotations

import json
import socket
import struct
import sys
import time

MAGIC, VERSION = 0x4650, 1
HELLO, WELCOME, REJECT, RESET, REQUESTS, VERDICTS = 1, 2, 3, 4, 5, 6


def header(type_: int, session: int, length: int, flags: int = 0, magic: int = MAGIC, version: int = VERSION) -> bytes:
    return struct.pack("!HBBIHBB", magic, version, type_, session, length, flags, 0)


def hello(version: int = VERSION, instance: int = 0x1234567, attempt: int = 1) -> bytes:
    body = struct.pack("!IIIHBBBBH", instance, attempt, 0, 64, 0, 0, 0, 0, 0) + bytes(32)
    return header(HELLO, 0, 64, version=version) + body


def requests(session: int, count: int = 1, length: int | None = None) -> bytes:
    entries = b"".join(struct.pack("!IIHHBB", 7, i, 1, 1500, 1, 0) for i in range(count))
    n = 24 + len(entries)
    return header(REQUESTS, session, n if length is None else length) + struct.pack("!BBHII", 0, 0, count, 0, 0) + entries


def udp_cases() -> dict[str, bytes]:
    return {
        "garbage": bytes(range(256)) * 2,
        "empty": b"",
        "short_header": b"FP\x01",
        "bad_magic": header(REQUESTS, 1, 24, magic=0xBEEF) + bytes(12),
        "bad_version_request": header(REQUESTS, 1, 24, version=7) + bytes(12),
        "huge_length": header(REQUESTS, 1, 65535) + bytes(12),
        "length_mismatch": requests(1, 2, length=40),
        "reserved_bits": header(REQUESTS, 1, 24, flags=0x80) + bytes(12),
        "wrong_direction": header(VERDICTS, 1, 24) + bytes(12),
        "unknown_type": header(99, 1, 12),
        "truncated_hello": hello()[:30],
        "oversized": header(REQUESTS, 1, 24) + bytes(3000),  # also IP-fragmented on a 1500 MTU
    }


def send_udp(src_ip: str, emu_ip: str = "10.77.0.2", port: int = 9977) -> dict:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((src_ip, 0))
    s.settimeout(0.2)
    sent = {}
    for name, payload in udp_cases().items():
        s.sendto(payload, (emu_ip, port))
        sent[name] = 1
        time.sleep(0.002)
    # Well-formed but refusable: answered, never crash.
    s.sendto(hello(version=9), (emu_ip, port))  # -> REJECT(VERSION), in version 9
    sent["hello_version_9"] = 1
    s.sendto(requests(0xDEAD), (emu_ip, port))  # unknown session -> RESET (or ignored from an unknown address)
    sent["requests_unknown_session"] = 1
    s.sendto(hello(), (emu_ip, port))  # from an address not in the topology -> REJECT(UNKNOWN_ENDPOINT)
    sent["hello"] = 1
    replies = []
    end = time.time() + 1.0
    while time.time() < end:
        try:
            data = s.recv(65535)
        except socket.timeout:
            continue
        if len(data) >= 12:
            m, v, t = struct.unpack("!HBB", data[:4])
            code = struct.unpack("!H", data[20:22])[0] if t == REJECT and len(data) >= 22 else None
            replies.append({"type": t, "version": v, "code": code})
    return {"sent": sent, "replies": replies}


def ip_checksum(b: bytes) -> int:
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def ipv4(src: str, dst: str, payload: bytes, proto: int = 17, ihl: int = 5, total: int | None = None,
         frag: int = 0, bad_csum: bool = False, version: int = 4) -> bytes:
    tot = 20 + len(payload) if total is None else total
    h = struct.pack("!BBHHHBBH4s4s", version << 4 | ihl, 0, tot, 1, frag, 64, proto, 0,
                    socket.inet_aton(src), socket.inet_aton(dst))
    c = ip_checksum(h)
    if bad_csum:
        c ^= 0x5A5A
    return h[:10] + struct.pack("!H", c) + h[12:]


def udp(sport: int, dport: int, payload: bytes, length: int | None = None) -> bytes:
    return struct.pack("!HHHH", sport, dport, 8 + len(payload) if length is None else length, 0) + payload


def send_raw(iface: str, emu_mac: str, src_ip: str, emu_ip: str = "10.77.0.2", port: int = 9977) -> dict:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    my_mac = s.getsockname()[4]
    dst = bytes.fromhex(emu_mac.replace(":", ""))
    eth = dst + my_mac + b"\x08\x00"
    req = requests(1)

    def frame(ip_hdr: bytes, l4: bytes) -> bytes:
        return eth + ip_hdr + l4

    u = udp(40000, port, req)
    forged = udp(40000, port, hello(instance=77))
    cases = {
        "forged_src_hello": frame(ipv4("10.77.0.200", emu_ip, forged), forged),
        "forged_src_requests": frame(ipv4("10.99.1.1", emu_ip, u), u),
        "ip_bad_checksum": frame(ipv4(src_ip, emu_ip, u, bad_csum=True), u),
        "ip_bad_version": frame(ipv4(src_ip, emu_ip, u, version=6), u),
        "ip_bad_ihl": frame(ipv4(src_ip, emu_ip, u, ihl=3), u),
        "ip_total_too_long": frame(ipv4(src_ip, emu_ip, u, total=1400), u),
        "ip_truncated": eth + ipv4(src_ip, emu_ip, u)[:12],
        "ip_fragment": frame(ipv4(src_ip, emu_ip, u, frag=0x2000), u),
        "udp_length_too_long": frame(ipv4(src_ip, emu_ip, udp(40000, port, req, length=900)),
                                     udp(40000, port, req, length=900)),
        "udp_truncated": frame(ipv4(src_ip, emu_ip, b"\x9c\x40\x26"), b"\x9c\x40\x26"),
        "not_udp": frame(ipv4(src_ip, emu_ip, u, proto=6), u),
        "non_ipv4": dst + my_mac + b"\x86\xdd" + bytes(60),
        "arp_malformed": b"\xff" * 6 + my_mac + b"\x08\x06" + bytes(10),
    }
    sent = {}
    for name, f in cases.items():
        s.send(f)
        sent[name] = 1
        time.sleep(0.002)
    return {"sent": sent, "replies": []}


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "udp":
        out = send_udp(*sys.argv[2:3], *sys.argv[3:4], *(int(a) for a in sys.argv[4:5]))
    elif mode == "raw":
        out = send_raw(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        sys.exit(f"unknown mode {mode}")
    print(json.dumps(out))
