#!/usr/bin/env python3
"""Reads the timelines `./jrdma grpc-bench` writes with -Djrdma.bench.grpcTrace=PREFIX (GrpcTrace: one file per
channel, `nanos kind bytes`, kinds R read starts, r read handled, C read batch complete, F flush) and prints, for one
transport's client and server channel:
  - the rate phase (the last D seconds of the client's timeline, less its last 0.2 s): read batches per side, reads and
    bytes per batch, flushes per batch, how long after the peer's flush a side starts reading, how busy each side is
    (from a batch's first read to its last flush) and how much of the time both are busy at once;
  - the latency phase (0.8 s to 0.1 s before the rate phase): one call's cycle cut into its hops: client flush ->
    server read, server read -> flush, server flush -> client read, client read -> its next flush (the answer handed to
    the calling thread, which starts the next call and hands it to the loop).
usage: grpc-trace.py CLIENT_FILE SERVER_FILE [D]   (D: the rate phase's seconds, grpc-bench's -D, default 5)
The files of one transport: the client's .1 is the first transport run (epoll by default), .2 the second; the servers
are separate processes (pids in the names), in the same order."""
import bisect
import statistics as st
import sys


def load(path):
    return [(int(t), k, int(b)) for t, k, b in (line.split() for line in open(path))]


def batches(ev):
    out, cur = [], None
    for t, k, b in ev:
        if k == 'R':
            if cur is None:
                cur = {'t0': t, 'reads': 0, 'bytes': 0, 'flushes': []}
            cur['reads'] += 1
            cur['bytes'] += b
        elif k == 'C' and cur is not None:
            cur['tc'] = t
            out.append(cur)
            cur = None
        elif k == 'F' and b > 0 and cur is None and out:
            out[-1]['flushes'].append(t)
    for b in out:
        b['t1'] = max(b['flushes'], default=b['tc'])
    return out


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * p))] / 1e3


def rate_phase(c, s, lo, hi):
    c = [e for e in c if lo <= e[0] <= hi]
    s = [e for e in s if lo <= e[0] <= hi]
    span = hi - lo
    sides = {}
    for name, ev, peer in (('client', c, s), ('server', s, c)):
        bs = batches(ev)
        sides[name] = bs
        if not bs:
            print(f'{name}: no read batch')
            continue
        peer_flushes = [t for t, k, b in peer if k == 'F' and b > 0]
        gaps = []
        for b in bs:
            i = bisect.bisect_left(peer_flushes, b['t0']) - 1
            if i >= 0:
                gaps.append(b['t0'] - peer_flushes[i])
        busy = sum(b['t1'] - b['t0'] for b in bs)
        print(f"{name}: {len(bs)} read batches in {span / 1e9:.2f} s; per batch {st.mean(b['reads'] for b in bs):.2f} "
              f"reads, {st.mean(b['bytes'] for b in bs):.0f} bytes, {st.mean(len(b['flushes']) for b in bs):.2f} "
              f"flushes; first read to last flush p50 {pct([b['t1'] - b['t0'] for b in bs], .5):.1f} us; "
              f"busy {busy / span * 100:.0f}%")
        if gaps:
            print(f"   peer's flush -> this side's read: p10 {pct(gaps, .1):.1f} p50 {pct(gaps, .5):.1f} "
                  f"p90 {pct(gaps, .9):.1f} us")
    both, j = 0, 0
    sv = sides.get('server', [])
    for a in sides.get('client', []):
        while j < len(sv) and sv[j]['t1'] < a['t0']:
            j += 1
        k = j
        while k < len(sv) and sv[k]['t0'] < a['t1']:
            both += max(0, min(a['t1'], sv[k]['t1']) - max(a['t0'], sv[k]['t0']))
            k += 1
    print(f'both sides busy at once: {both / span * 100:.1f}% of the time')


def latency_phase(c, s, lo, hi):
    cflush = [t for t, k, b in c if k == 'F' and b > 0]
    sread = [t for t, k, b in s if k == 'R']
    sflush = [t for t, k, b in s if k == 'F' and b > 0]
    cread = [t for t, k, b in c if k == 'R']
    rows = []
    for t0 in (t for t in cflush if lo <= t <= hi):
        t1 = nxt(sread, t0)
        t2 = nxt(sflush, t1)
        t3 = nxt(cread, t2)
        t4 = nxt(cflush, t3)
        if t4 is None:
            break
        rows.append((t1 - t0, t2 - t1, t3 - t2, t4 - t3, t4 - t0))
    print(f'latency phase, {len(rows)} calls:')
    for i, name in enumerate(('client flush -> server read', 'server read -> its flush',
                              'server flush -> client read', 'client read -> next flush', 'whole cycle')):
        v = [r[i] for r in rows]
        print(f'  {name:28s} p10 {pct(v, .1):7.1f}  p50 {pct(v, .5):7.1f}  p90 {pct(v, .9):7.1f} us')


def nxt(times, after):
    if after is None:
        return None
    i = bisect.bisect_right(times, after)
    return times[i] if i < len(times) else None


def main():
    c, s = load(sys.argv[1]), load(sys.argv[2])
    d = float(sys.argv[3]) if len(sys.argv) > 3 else 5.0
    end = c[-1][0]
    start = end - int(d * 1e9)
    rate_phase(c, s, start, end - int(0.2e9))
    latency_phase(c, s, start - int(0.8e9), start - int(0.1e9))


if __name__ == '__main__':
    main()
