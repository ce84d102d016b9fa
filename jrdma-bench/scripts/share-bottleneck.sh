#!/usr/bin/env bash
# One software-device `write_bw` and one TCP flow (`jrdma perf tcp_bw`) at the same time through one bottleneck with
# ECN marking, between two network namespaces joined by a veth (two-namespaces.sh): link utilisation, Jain's fairness
# between the two, the soft flow's packet loss at the bottleneck and DCQCN's CNPs; once with the soft device's
# congestion control on and once off (issue 23's bottleneck target); each --cc adds a run of its own (default: on,
# then off), its JVM options going to the soft flow's two JVMs (e.g. --cc "on:-Djrdma.soft.dcqcn.lineRateMbps=100").
#
#   jrdma-bench/scripts/share-bottleneck.sh [--rate 1gbit|auto] [--aqm red|fq_codel] [--cc on|off[:JVM opts]]... [-D SEC]
#                                           [--window SEC] [--mtu N] [--java-opts "..."] [--auto-share F]
#                                           [--soft-opts "perf flags"] [-s BYTES] [--later-seconds SEC] [--logs DIR]
#                                           [--first soft|tcp] [--soft-iters N]
#
# The bottleneck is the sending namespace's veth end: tbf at --rate (default 1gbit) over RED with `ecn` (one FIFO
# queue that marks ECT packets CE as its average queue grows: fairness is then the flows' own; its thresholds scale
# with the rate, see below) or fq_codel with `ecn` (a queue per flow: fair by itself, so a weaker test of the senders).
# TCP has ECN on in both namespaces (net.ipv4.tcp_ecn=1); the soft device sends ECT(0) and, with DCQCN on, answers CE
# with CNPs (notification point) and cuts its rate on them (reaction point).
#
# The soft flow starts first and runs -D seconds (default 180); the TCP flow starts once the soft one moves and runs
# --later-seconds (default the window + 30): under emulation a JVM takes a minute or more to start, and two flows
# started together need not overlap at all. --first tcp starts the TCP flow first instead (in the QEMU guest a soft
# flow without congestion control took the vCPUs the TCP flow's JVMs needed to start, and the two never overlapped).
#
# What is counted, all by the kernel on the veth ends (u32 filters with counting actions on clsact, no sampling
# inside the JVMs): each flow's bytes that arrive at the receiving end, read once a second while both flows run,
# over the same window (--window, default 8 s, starting when both are seen moving); and the soft flow's UDP packets
# offered to the bottleneck (the sender's egress, before the qdisc) against those that arrive, after both flows end.
# Utilisation = both flows' bytes on the wire (with their 14-byte Ethernet headers, as tbf counts them) / the rate;
# Jain's index = (a + b)^2 / (2 (a^2 + b^2)) over the two flows' bytes in the window. The soft sides print their
# device counters (-Djrdma.perf.counters=true: tx_cnps on the receiver, rx_cnps, dcqcn_rate_mbps, dcqcn_limits and
# dcqcn_line_mbps, dcqcn_lines_held on the sender).
#
# --rate auto: first each flow alone for --window seconds through the same veth without a bottleneck, then the
# rate = --auto-share (default 0.5) x the slower of the two, rounded down to 10 Mbit/s (for a host, or an emulated
# guest, that cannot carry 1 Gbit/s in both flows; the run says which rate it took and why).
# --soft-iters N: the soft flow sends N messages (-n) instead of running -D seconds: `jrdma perf` refuses -D with -e
# or --poll-budget (a soft side that waits on its completion channel instead of spinning), as perftest refuses -e.
# --logs DIR: each run's four perf logs (both sides of both flows) are kept there, named after the run.
# Needs root, iproute2 and the kernel's sch_tbf, sch_red or sch_fq_codel, sch_ingress (clsact), cls_u32, act_gact.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
rate=1gbit aqm=red ccs=() seconds=180 later="" window=8 mtu=9000 javaopts="" share=0.5 size=65536 softopts="" logs=""
first_flow=soft soft_iters=""
soft_port=18515 tcp_port=18516
while [ $# -gt 0 ]; do
  case "$1" in
    --rate) rate=$2; shift 2 ;;
    --aqm) aqm=$2; shift 2 ;;
    --cc) ccs+=("$2"); shift 2 ;;
    -D) seconds=$2; shift 2 ;;
    --window) window=$2; shift 2 ;;
    --later-seconds) later=$2; shift 2 ;;
    --mtu) mtu=$2; shift 2 ;;
    --java-opts) javaopts=$2; shift 2 ;;
    --auto-share) share=$2; shift 2 ;;
    --soft-opts) softopts=$2; shift 2 ;;
    -s) size=$2; shift 2 ;;
    --logs) logs=$2; shift 2 ;;
    --first) first_flow=$2; shift 2 ;;
    --soft-iters) soft_iters=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "share-bottleneck: unknown option $1 (--help)" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "share-bottleneck: needs root (ip netns, tc)" >&2; exit 1; }
[ -n "$later" ] || later=$((window + 30))
case "$aqm" in red|fq_codel) ;; *) echo "share-bottleneck: --aqm red or fq_codel" >&2; exit 2 ;; esac
case "$first_flow" in soft) flows=(soft tcp) ;; tcp) flows=(tcp soft) ;; *) echo "share-bottleneck: --first soft or tcp" >&2; exit 2 ;; esac
"$root/jrdma" --version >/dev/null # builds on first use, outside the namespaces
# shellcheck source=two-namespaces.sh
. "$here/two-namespaces.sh"
sysctl -qw net.core.rmem_max=8388608 net.core.wmem_max=8388608
twons_up "$mtu"
for n in "$ns1" "$ns2"; do ip netns exec "$n" sysctl -qw net.ipv4.tcp_ecn=1; done
export JRDMA_JAVA_OPTS="${JRDMA_JAVA_OPTS:-} -Djrdma.perf.warmup=0 -Djrdma.perf.counters=true $javaopts"
log=$(mktemp -d)
twons_on_down() { rm -rf "$log"; }
echo "share-bottleneck: $ns1 $ip1 (receives) <- $ns2 $ip2 (sends), veth MTU $mtu, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"

bits() { # a tc rate (1gbit, 250mbit, 800kbit, 1000000) in bits per second
  awk -v r="$1" 'BEGIN { n = r + 0; u = tolower(r); sub(/^[0-9.]+/, "", u)
    m = (u == "gbit") ? 1e9 : (u == "mbit") ? 1e6 : (u == "kbit") ? 1e3 : (u == "" || u == "bit") ? 1 : -1
    if (m < 0) exit 1; printf "%d\n", n * m }'
}

# counters: clsact on both ends; gact actions 1 (UDP to RoCEv2's port 4791: the soft flow's packets) and 2 (TCP to
# the tcp_bw server's port) count what passes (the perf tests' own out-of-band TCP exchanges are not counted)
counting() {
  local n=$1 dev=$2 dir=$3
  ip netns exec "$n" tc qdisc add dev "$dev" clsact
  ip netns exec "$n" tc filter add dev "$dev" "$dir" protocol ip prio 1 u32 match ip protocol 17 0xff \
    match ip dport 4791 0xffff action gact pass index 1
  ip netns exec "$n" tc filter add dev "$dev" "$dir" protocol ip prio 2 u32 match ip protocol 6 0xff \
    match ip dport "$tcp_port" 0xffff action gact pass index 2
}
uncounting() {
  ip netns exec "$1" tc qdisc del dev "$2" clsact 2>/dev/null || true
  ip netns exec "$1" tc actions flush action gact 2>/dev/null || true
}

bottleneck() { # RATE_BITS: tbf over the AQM on the sender's end
  local r=$1 burst limit minth maxth
  burst=$((r / 8 / 1000)) # 1 ms of the rate
  [ "$burst" -ge $((2 * mtu + 2000)) ] || burst=$((2 * mtu + 2000))
  minth=$((r / 8 / 1000 * 2)) # RED marks from 2 ms of queue (average), all at 6 ms; tail drop at 48 ms
  [ "$minth" -ge $((3 * mtu)) ] || minth=$((3 * mtu))
  maxth=$((3 * minth)) limit=$((24 * minth))
  ip netns exec "$ns2" tc qdisc add dev "$dev2" root handle 1: tbf rate "$r" burst "$burst" limit "$limit"
  if [ "$aqm" = red ]; then
    ip netns exec "$ns2" tc qdisc add dev "$dev2" parent 1:1 handle 10: red limit "$limit" min "$minth" max "$maxth" \
      avpkt 4200 burst $(((2 * minth + maxth) / (3 * 4200) + 1)) bandwidth "$r" probability 0.1 ecn
  else
    ip netns exec "$ns2" tc qdisc add dev "$dev2" parent 1:1 handle 10: fq_codel ecn
  fi
}

flow() { # FLOW CC: the perf test, port and JVM options of a flow
  if [ "$1" = soft ]; then
    echo "write_bw $soft_port $([ "$2" = off ] && echo -Djrdma.soft.dcqcn=off) $ccopts"
  else echo "tcp_bw $tcp_port"; fi
}
start_flow() { # CC FLOW SECONDS: its server in ns1, then its client in ns2; logs $log/FLOW-*.log
  local cc=$1 f=$2 secs=$3 test port opts more="" ns ip side host length
  read -r test port opts <<<"$(flow "$f" "$cc")"
  [ "$f" = soft ] && more=$softopts
  length="-D $secs"
  [ "$f" = soft ] && [ -n "$soft_iters" ] && length="-n $soft_iters"
  for side in server client; do
    if [ "$side" = server ]; then ns=$ns1 ip=$ip1 host=""; else ns=$ns2 ip=$ip2 host=$ip1; fi
    # shellcheck disable=SC2086
    JRDMA_JAVA_OPTS="$JRDMA_JAVA_OPTS $opts" twons_bg "$ns" "$root/jrdma" perf "$test" -d "soft@$ip" -p "$port" \
      -s "$size" $length --timeout 120 $more $host >"$log/$f-$side.log" 2>&1
  done
}

# sample NS: "SECONDS SOFT_BYTES SOFT_PACKETS TCP_BYTES TCP_PACKETS": both counters from one read, and when it was
# read (the middle of the tc call: under emulation one fork and exec can take a good part of a second)
sample() {
  local t0 out t1
  t0=$EPOCHREALTIME
  out=$(ip netns exec "$1" tc -s actions list action gact)
  t1=$EPOCHREALTIME
  awk -v t0="$t0" -v t1="$t1" '{ for (i = 1; i < NF; i++) if ($i == "index") ix = $(i + 1) }
    /Sent/ { b[ix] = $2; p[ix] = $4 }
    END { printf "%.6f %.0f %.0f %.0f %.0f\n", (t0 + t1) / 2, b[1], p[1], b[2], p[2] }' <<<"$out"
}
# between A and B (two samples): each flow's Mbit/s on the wire (14 bytes of Ethernet header a packet, as tbf counts)
rates() {
  awk -v a="$1" -v b="$2" 'BEGIN { split(a, x, " "); split(b, y, " "); dt = y[1] - x[1]
    printf "%.3f %.1f %.1f\n", dt, (y[2] - x[2] + 14 * (y[3] - x[3])) * 8 / dt / 1e6,
      (y[4] - x[4] + 14 * (y[5] - x[5])) * 8 / dt / 1e6 }'
}

# moving FLOW...: waits until every flow moves (the JVMs of a flow take a minute or more to start under emulation)
moving() {
  local f up deadline=$((SECONDS + 300)) a b s t
  while :; do # all moving: each faster than 0.8 Mbit/s over the last half second or so
    a=$(sample "$ns1")
    sleep 0.5
    b=$(sample "$ns1")
    read -r _ s t <<<"$(rates "$a" "$b")"
    up=1
    for f in "$@"; do
      case "$f" in
        soft) awk -v s="$s" 'BEGIN { exit !(s > 0.8) }' || up=0 ;;
        tcp) awk -v t="$t" 'BEGIN { exit !(t > 0.8) }' || up=0 ;;
      esac
    done
    [ "$up" = 1 ] && return 0
    [ $SECONDS -lt $deadline ] || {
      echo "share-bottleneck: the flows ($*) never ran together (last: soft $s, tcp $t Mbit/s)" >&2
      return 1
    }
  done
}

# measure FLOW...: waits until every flow moves, then reads the receiving end's counters about once a second for
# $window seconds; sets got_soft, got_tcp (Mbit/s over the window) and got_secs, and prints the series
measure() {
  local a b first r dt s t
  moving "$@" || return 1
  first=$(sample "$ns1")
  a=$first
  printf '  seconds  soft Mbit/s  tcp Mbit/s\n'
  while :; do
    sleep 1
    b=$(sample "$ns1")
    read -r dt s t <<<"$(rates "$a" "$b")"
    read -r r _ <<<"$(rates "$first" "$b")"
    printf '  %7.1f  %11.1f  %10.1f\n' "$r" "$s" "$t"
    a=$b
    awk -v r="$r" -v w="$window" 'BEGIN { exit !(r >= w) }' && break
  done
  read -r got_secs got_soft got_tcp <<<"$(rates "$first" "$b")"
}

finish() { # FLOW...: waits for every flow, prints each side's result line and the soft sides' counters
  local p f side
  for p in "${twons_pids[@]}"; do wait "$p" || echo "  share-bottleneck: a flow ended with $?"; done
  twons_pids=()
  if [ -n "$logs" ]; then
    mkdir -p "$logs"
    local name=${cc_name//[^A-Za-z0-9._=-]/_}
    for f in "$log"/*.log; do cp "$f" "$logs/$(date -u +%H%M%S)-cc-${name:0:60}-$(basename "$f")"; done
  fi
  for f in "$@"; do
    for side in client server; do
      grep -shE '^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+|^counters of|Exception|rror' "$log/$f-$side.log" | sort -u |
        sed "s/^/  $f $side: /" || true
    done
  done
}

run() { # CC RATE_BITS|"" FLOW...: one run; RATE "" = no bottleneck
  local cc=$1 r=$2
  shift 2
  cc_name="$cc${ccopts:+-$ccopts}"
  uncounting "$ns1" "$dev1"
  uncounting "$ns2" "$dev2"
  ip netns exec "$ns2" tc qdisc del dev "$dev2" root 2>/dev/null || true
  counting "$ns1" "$dev1" ingress
  counting "$ns2" "$dev2" egress
  [ -z "$r" ] || bottleneck "$r"
  local where="no bottleneck"
  [ -z "$r" ] || where="bottleneck tbf $((r / 1000000)) Mbit/s + $aqm ecn"
  echo "== $* at once, congestion control $cc${ccopts:+ ($ccopts)}, $where, -D $seconds (the first flow) and $later (the second), window $window s"
  # one flow after the other, each once the one before moves: the JVMs' start under emulation takes minutes, and a
  # flow started at once with the first could be over before the first moves; the first runs -D seconds, the others
  # the window and a margin (--later-seconds)
  local f started=() ok=1
  for f in "$@"; do
    [ ${#started[@]} = 0 ] || moving "${started[@]}" || { ok=0; break; }
    if [ ${#started[@]} = 0 ]; then start_flow "$cc" "$f" "$seconds"; else start_flow "$cc" "$f" "$later"; fi
    started+=("$f")
  done
  if [ "$ok" = 0 ] || ! measure "$@"; then
    finish "$@"
    tail -n 5 "$log"/*.log
    return 1
  fi
  finish "$@"
  local so sa
  so=$(sample "$ns2") sa=$(sample "$ns1")
  [ -z "$r" ] || echo "  bottleneck: $(ip netns exec "$ns2" tc -s qdisc show dev "$dev2" | tr -s ' \n' ' ')"
  awk -v s="$got_soft" -v t="$got_tcp" -v w="$got_secs" -v r="${r:-0}" -v so="$so" -v sa="$sa" 'BEGIN {
    split(so, o, " "); split(sa, a, " ")
    printf "  window (%.1f s): soft %.1f Mbit/s, tcp %.1f Mbit/s", w, s, t
    if (s > 0 && t > 0) printf ", Jain %.3f", (s + t) ^ 2 / (2 * (s ^ 2 + t ^ 2))
    if (r > 0) printf ", utilisation %.1f%%", 100 * (s + t) * 1e6 / r
    if (o[3] > 0) printf "; soft packets offered %d, arrived %d, lost %.3f%%", o[3], a[3], 100 * (o[3] - a[3]) / o[3]
    printf "\n" }'
}

rate_bits=""
if [ "$rate" = auto ]; then
  ccopts=""
  run on "" soft
  alone_soft=$got_soft
  run on "" tcp
  alone_tcp=$got_tcp
  rate_bits=$(awk -v a="$alone_soft" -v b="$alone_tcp" -v f="$share" 'BEGIN {
    m = (a < b ? a : b) * f; printf "%d\n", (m >= 10 ? int(m / 10) * 10 : (m >= 1 ? int(m) : 1)) * 1e6 }')
  echo "rate auto: soft alone $alone_soft Mbit/s, tcp alone $alone_tcp Mbit/s (over their windows): the bottleneck is $share x the slower, $((rate_bits / 1000000)) Mbit/s"
else
  rate_bits=$(bits "$rate") || { echo "share-bottleneck: --rate $rate?" >&2; exit 2; }
fi
[ ${#ccs[@]} -gt 0 ] || ccs=(on off)
for spec in "${ccs[@]}"; do
  ccopts=""
  [[ $spec != *:* ]] || ccopts=${spec#*:}
  run "${spec%%:*}" "$rate_bits" "${flows[@]}" || echo "share-bottleneck: the run with congestion control $spec failed"
done
