#!/usr/bin/python3
"""Recomputes the RoCEv2 ICRC of every UDP/4791 packet in a pcap file the way a receiving RoCE device does (from
the IP header on the wire: IPv4 identification and all; TOS, TTL, IP and UDP checksums masked for IPv4; traffic
class, flow label and hop limit masked for IPv6; BTH resv8a masked), and reports per source -> destination how many
packets carry a correct ICRC, with their IPv4 identifications.

  icrc-check.py FILE.pcap [--require SRC]...   exit 1 when a packet from SRC (an IP address) has a wrong ICRC,
                                               or when no packet from SRC was captured
"""
import struct
import sys
import zlib
import ipaddress

ROCE_PORT = 4791


def packets(path):
    with open(path, 'rb') as f:
        data = f.read()
    magic = struct.unpack('<I', data[:4])[0]
    endian = '<' if magic in (0xa1b2c3d4, 0xa1b23c4d) else '>'
    linktype = struct.unpack(endian + 'I', data[20:24])[0]
    off = 24
    while off + 16 <= len(data):
        _, _, caplen, _ = struct.unpack(endian + 'IIII', data[off:off + 16])
        frame = data[off + 16:off + 16 + caplen]
        off += 16 + caplen
        if linktype == 1:          # Ethernet
            etype, l3 = struct.unpack('>H', frame[12:14])[0], frame[14:]
        elif linktype == 113:      # Linux cooked (any)
            etype, l3 = struct.unpack('>H', frame[14:16])[0], frame[16:]
        elif linktype == 276:      # Linux cooked v2
            etype, l3 = struct.unpack('>H', frame[0:2])[0], frame[20:]
        else:
            raise SystemExit('icrc-check: unsupported pcap link type %d' % linktype)
        yield etype, l3


def check(etype, l3):
    """(src, dst, ip_id or None, ok) for a RoCEv2 packet, else None."""
    if etype == 0x0800:
        ihl = (l3[0] & 15) * 4
        if l3[9] != 17:
            return None
        ip = bytearray(l3[:ihl])
        ip_id = struct.unpack('>H', ip[4:6])[0]
        ip[1] = 0xff
        ip[8] = 0xff
        ip[10:12] = b'\xff\xff'
        src, dst = str(ipaddress.ip_address(bytes(l3[12:16]))), str(ipaddress.ip_address(bytes(l3[16:20])))
        total = struct.unpack('>H', l3[2:4])[0]
        udp = l3[ihl:total]
    elif etype == 0x86dd:
        if l3[6] != 17:
            return None
        ip = bytearray(l3[:40])
        ip_id = None
        ip[0] = 0x6f
        ip[1:4] = b'\xff\xff\xff'
        ip[7] = 0xff
        src, dst = str(ipaddress.ip_address(bytes(l3[8:24]))), str(ipaddress.ip_address(bytes(l3[24:40])))
        plen = struct.unpack('>H', l3[4:6])[0]
        udp = l3[40:40 + plen]
    else:
        return None
    if len(udp) < 8 + 12 + 4 or struct.unpack('>H', udp[2:4])[0] != ROCE_PORT:
        return None
    uh = bytearray(udp[:8])
    uh[6:8] = b'\xff\xff'
    bth = bytearray(udp[8:20])
    bth[4] = 0xff
    body = udp[20:-4]
    crc = zlib.crc32(b'\xff' * 8 + bytes(ip) + bytes(uh) + bytes(bth) + bytes(body)) & 0xffffffff
    stored = struct.unpack('<I', udp[-4:])[0]
    return src, dst, ip_id, crc == stored


def main(argv):
    if not argv or argv[0].startswith('-'):
        print(__doc__, file=sys.stderr)
        return 2
    path, require = argv[0], []
    rest = argv[1:]
    while rest:
        if rest[0] == '--require' and len(rest) > 1:
            require.append(str(ipaddress.ip_address(rest[1])))
            rest = rest[2:]
        else:
            print(__doc__, file=sys.stderr)
            return 2
    flows = {}
    for etype, l3 in packets(path):
        r = check(etype, l3)
        if r is None:
            continue
        src, dst, ip_id, ok = r
        f = flows.setdefault((src, dst), {'ok': 0, 'bad': 0, 'ids': []})
        f['ok' if ok else 'bad'] += 1
        if ip_id is not None and len(f['ids']) < 6:
            f['ids'].append(ip_id)
    rc = 0
    for (src, dst), f in sorted(flows.items()):
        ids = (' ipv4 ids ' + ','.join(map(str, f['ids'])) + (',...' if f['ok'] + f['bad'] > 6 else '')) if f['ids'] else ''
        print('icrc %s -> %s: %d correct, %d wrong%s' % (src, dst, f['ok'], f['bad'], ids))
    for src in require:
        mine = [f for (s, _), f in flows.items() if s == src]
        if not mine:
            print('icrc: no RoCEv2 packet from %s captured' % src)
            rc = 1
        elif any(f['bad'] for f in mine):
            print('icrc: packets from %s with a wrong ICRC' % src)
            rc = 1
    return rc


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
