"""Tiny packet toolkit for the router tests: build Ethernet/IPv4/UDP/TCP/ICMP/ARP
frames byte by byte, read and write classic pcap files. No dependencies, so the
tests check the router against code that shares nothing with it."""
from __future__ import annotations

import socket
import struct
from dataclasses import dataclass, field
from pathlib import Path

ETH_IPV4 = 0x0800
ETH_ARP = 0x0806
ETH_IPV6 = 0x86DD


def mac_bytes(mac: str) -> bytes:
    return bytes(int(x, 16) for x in mac.split(":"))


def mac_str(b: bytes) -> str:
    return ":".join(f"{x:02x}" for x in b)


def ip_bytes(ip: str) -> bytes:
    return socket.inet_aton(ip)


def ip_str(b: bytes) -> str:
    return socket.inet_ntoa(b)


def checksum(data: bytes) -> int:
    """RFC 1071 internet checksum (the value to store)."""
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def ipv4_header(src: str, dst: str, proto: int, payload_len: int, ttl: int = 64, tos: int = 0,
                ident: int = 1, flags_frag: int = 0, options: bytes = b"", bad_checksum: bool = False,
                version: int = 4, ihl: int | None = None, total_length: int | None = None) -> bytes:
    hlen = 20 + len(options)
    if ihl is None:
        ihl = hlen // 4
    if total_length is None:
        total_length = hlen + payload_len
    h = struct.pack("!BBHHHBBH4s4s", (version << 4) | ihl, tos, total_length, ident, flags_frag, ttl, proto, 0,
                    ip_bytes(src), ip_bytes(dst)) + options
    c = checksum(h)
    if bad_checksum:
        c ^= 0x5555
    return h[:10] + struct.pack("!H", c) + h[12:]


def udp(sport: int, dport: int, payload: bytes) -> bytes:
    return struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload


def tcp(sport: int, dport: int, payload: bytes = b"") -> bytes:
    return struct.pack("!HHIIBBHHH", sport, dport, 1, 0, 5 << 4, 0x18, 65535, 0, 0) + payload


def eth(dst: str, src: str, ethertype: int, payload: bytes) -> bytes:
    return mac_bytes(dst) + mac_bytes(src) + struct.pack("!H", ethertype) + payload


def udp_frame(dst_mac: str, src_mac: str, src: str, dst: str, sport: int = 1000, dport: int = 2000,
              payload_len: int = 18, **ip_kw) -> bytes:
    body = udp(sport, dport, bytes(payload_len))
    return eth(dst_mac, src_mac, ETH_IPV4, ipv4_header(src, dst, 17, len(body), **ip_kw) + body)


def icmp_echo(dst_mac: str, src_mac: str, src: str, dst: str, ident: int = 7, seq: int = 1,
              data: bytes = b"flexplane") -> bytes:
    msg = struct.pack("!BBHHH", 8, 0, 0, ident, seq) + data
    msg = msg[:2] + struct.pack("!H", checksum(msg)) + msg[4:]
    return eth(dst_mac, src_mac, ETH_IPV4, ipv4_header(src, dst, 1, len(msg)) + msg)


def arp(dst_mac: str, src_mac: str, op: int, sha: str, spa: str, tha: str, tpa: str) -> bytes:
    body = struct.pack("!HHBBH6s4s6s4s", 1, ETH_IPV4, 6, 4, op, mac_bytes(sha), ip_bytes(spa), mac_bytes(tha),
                       ip_bytes(tpa))
    return eth(dst_mac, src_mac, ETH_ARP, body)


# ---------------------------------------------------------------- parsing --

@dataclass
class Frame:
    raw: bytes
    ts: float = 0.0
    dst: str = field(init=False)
    src: str = field(init=False)
    ethertype: int = field(init=False)

    def __post_init__(self) -> None:
        self.dst = mac_str(self.raw[0:6])
        self.src = mac_str(self.raw[6:12])
        self.ethertype = struct.unpack("!H", self.raw[12:14])[0]

    @property
    def l3(self) -> bytes:
        return self.raw[14:]

    # IPv4 accessors
    @property
    def ihl(self) -> int:
        return (self.l3[0] & 15) * 4

    @property
    def tos(self) -> int:
        return self.l3[1]

    @property
    def ecn(self) -> int:
        return self.l3[1] & 3

    @property
    def ttl(self) -> int:
        return self.l3[8]

    @property
    def proto(self) -> int:
        return self.l3[9]

    @property
    def ip_src(self) -> str:
        return ip_str(self.l3[12:16])

    @property
    def ip_dst(self) -> str:
        return ip_str(self.l3[16:20])

    @property
    def ip_checksum_ok(self) -> bool:
        return checksum(self.l3[: self.ihl]) == 0

    @property
    def l4(self) -> bytes:
        total = struct.unpack("!H", self.l3[2:4])[0]
        return self.l3[self.ihl:total]

    @property
    def udp_payload(self) -> bytes:
        return self.l4[8:]


# ------------------------------------------------------------------ pcap --

PCAP_MAGIC_US = 0xA1B2C3D4
PCAP_MAGIC_NS = 0xA1B23C4D


def write_pcap(path: Path | str, frames: list[bytes], gap_us: int = 10) -> None:
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", PCAP_MAGIC_US, 2, 4, 0, 0, 65535, 1))
        for i, fr in enumerate(frames):
            t = i * gap_us
            f.write(struct.pack("<IIII", t // 1_000_000, t % 1_000_000, len(fr), len(fr)))
            f.write(fr)


def read_pcap(path: Path | str) -> list[Frame]:
    data = Path(path).read_bytes()
    if len(data) < 24:
        return []
    magic = struct.unpack("<I", data[:4])[0]
    if magic not in (PCAP_MAGIC_US, PCAP_MAGIC_NS):
        raise ValueError(f"{path}: not a little-endian pcap file (magic {magic:#x})")
    scale = 1e-6 if magic == PCAP_MAGIC_US else 1e-9
    out, off = [], 24
    while off + 16 <= len(data):
        sec, frac, incl, _orig = struct.unpack("<IIII", data[off:off + 16])
        off += 16
        out.append(Frame(data[off:off + incl], sec + frac * scale))
        off += incl
    return out
