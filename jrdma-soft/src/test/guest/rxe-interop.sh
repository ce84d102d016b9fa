#!/usr/bin/env bash
# Inside the Soft-RoCE guest: the software device against kernel rxe over a veth pair (two-ns.sh: rxe1 in the initial
# namespace, the software device in namespace jsoft), IPv4 and IPv6 GIDs. Each address family runs:
#  - jrdma-cli's InteropMain on both sides: every opcode (SEND, +imm, +inv, WRITE, +imm, READ, both atomics) at sizes
#    0, 1, MTU-1, MTU, MTU+1, 1 MiB, the software device as requester against rxe as responder and the reverse, every
#    case checked on both sides, the veth captured and every ICRC recomputed (icrc-check.py); IPv4 again with loss on
#    the veth (tc netem); IPv6 also over the link-local GIDs;
#  - perftest's eight tests on rxe against `jrdma perf` on the software device, both ways (16 pairs), ibv_rc_pingpong
#    against RcPingPong both ways, and (IPv4) the first RDMA application with its server on rxe (native provider) and
#    its client on the software device, and the reverse;
# then both devices' counters (no ICRC errors or drops caused by the other) and the soft device's GID table against
# rxe's for the same interface (jrdma devinfo -v against ibv_devinfo -v, GID lines).
# Every jrdma side of a namespace runs in one JVM (InteropSideMain): under TCG a JVM start costs 10-20 s.
#
#   ./jrdma --help >/dev/null && mvn -q -DskipTests test-compile     # on the host: the guest builds nothing
#   vm/run-in-guest --timeout 1500 -- jrdma-soft/src/test/guest/rxe-interop.sh
#
# Environment: INTEROP_IPV6=0 leaves out the IPv6 runs and the GID table comparison; INTEROP_PAIRS=0 leaves out
# perftest, rc_pingpong and the demo; INTEROP_FULL=1 adds the loss run at every size and three iterations of the
# matrix. ITERS (perftest -n, default 100), LOSS (percent, default 2), LOG_DIR (jrdma-soft/target/interop).
# Exit status 0 when every step passed, 1 otherwise, 2 when this is not the guest (no rxe, not root).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../../.." && pwd)
cd "$repo" || exit 2
source "$here/two-ns.sh"
[ "$(id -u)" = 0 ] && command -v rdma >/dev/null && modinfo rdma_rxe >/dev/null 2>&1 ||
  { echo "rxe-interop: needs root and kernel rxe (run it in the guest: vm/run-in-guest)" >&2; exit 2; }
LOG_DIR=${LOG_DIR:-$repo/jrdma-soft/target/interop}
LOSS=${LOSS:-2}
mkdir -p "$LOG_DIR"
JAVA_HOME=${JAVA_HOME:-$(bin/find-jdk)}
CP="jrdma-cli/target/test-classes:jrdma-cli/target/classes:$(cat jrdma-cli/target/classpath.txt)"
[ -f jrdma-cli/target/test-classes/dev/jrdma/cli/InteropMain.class ] || { echo "rxe-interop: InteropMain not compiled (mvn test-compile on the host)" >&2; exit 2; }
JAVA=("$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -XX:TieredStopAtLevel=1 -Xshare:auto)
ITERS=${ITERS:-100}

two_ns_up || exit 1
trap 'netem_off; sides_stop; two_ns_down' EXIT
GIDX=$(gid_index "$RXE_DEV" "$RXE_IP4") || { echo "rxe-interop: $RXE_DEV has no GID for $RXE_IP4" >&2; exit 1; }
full6() { python3 -c 'import ipaddress,sys; print(ipaddress.ip_address(sys.argv[1]).exploded)' "$1"; }
GIDX6=$(gid_index "$RXE_DEV" "$(full6 "$RXE_IP6")") || { echo "rxe-interop: $RXE_DEV has no GID for $RXE_IP6" >&2; GIDX6=none; }

rxe_counters() { # the non-zero hw_counters of rxe's port
  local f v
  for f in /sys/class/infiniband/$RXE_DEV/ports/1/hw_counters/*; do
    v=$(cat "$f"); [ "$v" != 0 ] && printf ' %s=%s' "$(basename "$f")" "$v"
  done
  echo
}

# ---- one JVM per namespace (InteropSideMain, through side-jvm.sh) runs every jrdma side: side "rxe" in the initial
# namespace (the native provider), side "soft" in jsoft; a command goes in as a line, "DONE STATUS" comes back when it ended
source "$repo/jrdma-cli/src/test/guest/side-jvm.sh"
side_jvm=("${JAVA[@]}" -Djrdma.soft.ipv4.send="${SOFT_SEND:-auto}" -Djrdma.perf.warmup=0 -Djrdma.perf.counters=true
          -cp "$CP" dev.jrdma.cli.InteropSideMain)
side_define rxe "$LOG_DIR/side.rxe.err" "${side_jvm[@]}"
side_define soft "$LOG_DIR/side.soft.err" ip netns exec "$SOFT_NS" "${side_jvm[@]}"
sides_stop() { side_stop rxe; side_stop soft; }

# packets the kernel dropped because a CPU's input backlog (net.core.netdev_max_backlog) was full: a veth delivers
# through it, so a burst larger than the backlog that rxe's receive path has not drained yet loses packets
backlog_drops() { local s=0 a b rest; while read -r a b rest; do s=$((s + 16#$b)); done < /proc/net/softnet_stat; echo "$s"; }

pass=0 fail=0 skip=0 port=18810
summary=()
# interop NAME [InteropMain args...]: rxe1 (native provider) listens in the initial namespace, the software device
# connects from jsoft; each side is requester for the whole matrix once. IP=6 runs it over the IPv6 GIDs (rxe's
# GID of fd98::1, the soft device soft@[fd98::2] with its own GID, chosen without -x); IP=ll over the link-local ones.
interop() {
  local name=$1; shift
  port=$((port + 1))
  local rlog="$LOG_DIR/$name.rxe.log" slog="$LOG_DIR/$name.soft.log" rrc src t0=$SECONDS
  local gidx=$GIDX soft="soft@$SOFT_IP4" peer=$RXE_IP4
  [ "${IP:-4}" = 6 ] && { gidx=$GIDX6; soft="soft@[$SOFT_IP6]"; peer=$RXE_IP6; }
  [ "${IP:-4}" = ll ] && { gidx=0; soft="soft@[$SOFT_LL%$SOFT_IF]"; peer="$RXE_LL%$SOFT_IF"; }
  side_run rxe "$rlog" interop -d "$RXE_DEV" -x "$gidx" -p "$port" "$@"
  side_run soft "$slog" interop -d "$soft" -p "$port" "$@" "$peer"
  side_wait soft 600; src=$?
  side_wait rxe 120; rrc=$?
  local np nf
  np=$(cat "$rlog" "$slog" | grep -c '^PASS'); nf=$(cat "$rlog" "$slog" | grep -c '^FAIL')
  if [ "$src" = 0 ] && [ "$rrc" = 0 ] && [ "$np" -gt 0 ] && [ "$nf" = 0 ]; then
    pass=$((pass + 1)); summary+=("PASS $name: $np cases ($((SECONDS - t0)) s)")
  else
    fail=$((fail + 1)); summary+=("FAIL $name: $np passed, $nf failed, rc rxe=$rrc soft=$src")
    grep -h '^FAIL' "$rlog" "$slog" | head -20
    echo "--- rxe side ($rlog):"; tail -5 "$rlog"; echo "--- soft side ($slog):"; tail -5 "$slog"
  fi
  grep -h '^counters of' "$rlog" "$slog"
  echo "rxe hw_counters:$(rxe_counters)"
  # the software device dropped nothing of rxe's as corrupt (rxe itself counts no ICRC drops: the capture shows them)
  if grep -h '^counters of soft' "$slog" | grep -Eq ' (rx_bad_icrc|rx_malformed|rx_dropped)='; then
    fail=$((fail + 1)); summary+=("FAIL $name: the software device dropped packets of rxe as corrupt")
  fi
}

# capture_on / capture_check NAME: the veth's RoCEv2 traffic of a run, every packet's ICRC recomputed from the IP
# header on the wire (icrc-check.py), both directions required
capture_on() {
  command -v tcpdump >/dev/null || { echo "rxe-interop: no tcpdump here: the wire check is skipped"; return 1; }
  tcpdump -i "$RXE_IF" -U -s 0 -w "$LOG_DIR/$1.pcap" udp port 4791 2> "$LOG_DIR/$1.tcpdump.log" & tcpdump_pid=$!
  capture_from=("${@:2}")
  for _ in $(seq 100); do grep -q listening "$LOG_DIR/$1.tcpdump.log" && return 0; sleep 0.1; done
  return 0
}
capture_check() {
  [ -n "${tcpdump_pid:-}" ] || return 0
  sleep 0.5; kill "$tcpdump_pid"; wait "$tcpdump_pid" 2>/dev/null; tcpdump_pid=
  if python3 "$here/icrc-check.py" "$LOG_DIR/$1.pcap" --require "${capture_from[0]}" --require "${capture_from[1]}"; then
    pass=$((pass + 1)); summary+=("PASS $1 on the wire: every ICRC right in both directions")
  else
    fail=$((fail + 1)); summary+=("FAIL $1 on the wire: ICRC check of the capture")
  fi
}

# pair NAME WHERE_SERVER "SERVER CMD" "CLIENT CMD" [REPORT_REGEX]: the server on rxe (initial namespace) or soft
# (jsoft), the client on the other side; a command "jrdma TOOL ARGS" runs in that side's JVM (InteropSideMain), any
# other in a shell there. Passes when both end with status 0 (and the client's log matches REPORT_REGEX).
pair() {
  local name=$1 where=$2 scmd=$3 ccmd=$4 want=${5:-} spid= src crc t0=$SECONDS other=soft ns= drops0 drops
  drops0=$(backlog_drops)
  local slog="$LOG_DIR/$name.server.log" clog="$LOG_DIR/$name.client.log"
  port=$((port + 1))
  scmd=${scmd//@PORT@/$port}; ccmd=${ccmd//@PORT@/$port}
  [ "$where" = soft ] && { other=rxe; ns=$SOFT_NS; }
  if [[ $scmd == "jrdma "* ]]; then side_run "$where" "$slog" ${scmd#jrdma }
  elif [ "$where" = soft ]; then in_soft timeout 300 bash -c "$scmd" > "$slog" 2>&1 & spid=$!
  else timeout 300 bash -c "$scmd" > "$slog" 2>&1 & spid=$!
  fi
  wait_listen "$port" $ns || echo "server did not listen on $port" >> "$slog"
  if [[ $ccmd == "jrdma "* ]]; then side_run "$other" "$clog" ${ccmd#jrdma }; side_wait "$other" 300; crc=$?
  elif [ "$other" = soft ]; then in_soft timeout 300 bash -c "$ccmd" > "$clog" 2>&1; crc=$?
  else timeout 300 bash -c "$ccmd" > "$clog" 2>&1; crc=$?
  fi
  if [ -n "$spid" ]; then wait "$spid"; src=$?; else side_wait "$where" 150; src=$?; fi
  drops=$(( $(backlog_drops) - drops0 ))
  echo "$name: rxe hw_counters:$(rxe_counters); input backlog drops: $drops"
  [ "$drops" -gt 0 ] && drops=", $drops packets dropped in the input backlog" || drops=
  if [ "$src" = 0 ] && [ "$crc" = 0 ] && { [ -z "$want" ] || grep -Eq "$want" "$clog"; }; then
    pass=$((pass + 1)); summary+=("PASS $name ($((SECONDS - t0)) s$drops)")
  elif grep -q "Can't produce a report" "$slog" "$clog"; then
    # perftest measures its clock's rate before it reports; under TCG that fails (r^2 < 0.9) and it exits without
    # the closing exchange, so its peer fails too: not a verdict on the traffic (perftest-interop.sh does the same)
    skip=$((skip + 1)); summary+=("SKIP $name: perftest could not calibrate its clock under TCG (Can't produce a report)")
  else
    fail=$((fail + 1)); summary+=("FAIL $name: server rc=$src client rc=$crc ($((SECONDS - t0)) s$drops)")
    echo "FAIL $name"; echo "--- server ($slog):"; tail -8 "$slog"; echo "--- client ($clog):"; tail -8 "$clog"
  fi
}

# pairs FAMILY SOFT_DEVICE GID_INDEX: perftest's eight tests on rxe against jrdma perf on the software device, both
# ways, and ibv_rc_pingpong against RcPingPong both ways, with the RDMA traffic over GID_INDEX (rxe; the soft device
# uses its own address's GID, at the same index). perftest's out-of-band exchange speaks IPv4 only ("Address family
# for hostname not supported"), so the TCP side runs over IPv4 for both families.
# QP timeout 17 (0.5 s) on both sides (-u, perftest's flag): with the usual 14 (67 ms) a requester under TCG on a loaded
# host times out while its peer is still working through a window, and the go-back-N that follows doubles the traffic
# (ib_read_bw against the soft device re-sent 40% of the READ responses; a soft send_bw to rxe ended in RETRY_EXC_ERR)
pairs() {
  local fam=$1 soft=$2 gidx=$3 t
  for t in send_lat write_lat read_lat atomic_lat send_bw write_bw read_bw atomic_bw; do
    pair "perf$fam.$t.rxe-server" rxe "ib_$t -d $RXE_DEV -x $gidx -n $ITERS -u 17 -p @PORT@" \
      "jrdma perf $t -d $soft -n $ITERS -u 17 -p @PORT@ --timeout 60 $RXE_IP4" '^ *[0-9]+ +[0-9]+ +'
    pair "perf$fam.$t.soft-server" soft "jrdma perf $t -d $soft -n $ITERS -u 17 -p @PORT@ --timeout 60 --accept-timeout 120" \
      "ib_$t -d $RXE_DEV -x $gidx -n $ITERS -u 17 -p @PORT@ $SOFT_IP4" '^ *[0-9]+ +[0-9]+ +'
  done
  pair "rc_pingpong$fam.rxe-server" rxe "ibv_rc_pingpong -d $RXE_DEV -g $gidx -n 50 -p @PORT@" \
    "jrdma rc_pingpong -d $soft -g $gidx -n 50 -p @PORT@ $RXE_IP4" 'iters in'
  pair "rc_pingpong$fam.soft-server" soft "jrdma rc_pingpong -d $soft -g $gidx -n 50 -p @PORT@" \
    "ibv_rc_pingpong -d $RXE_DEV -g $gidx -n 50 -p @PORT@ $SOFT_IP4" 'iters in'
}
SOFT="soft@$SOFT_IP4"

echo "rxe: $RXE_DEV on $RXE_IF ($RXE_IP4, GID index $GIDX); soft: soft@$SOFT_IP4 in namespace $SOFT_NS"
side_start rxe; side_start soft
tcpdump_pid=
capture_on ipv4 "$RXE_IP4" "$SOFT_IP4"
interop ipv4
capture_check ipv4
netem_loss "$LOSS" || { echo "rxe-interop: tc netem failed (module sch_netem?)"; fail=$((fail + 1)); }
if [ "${INTEROP_FULL:-0}" = 1 ]; then
  interop "ipv4-loss$LOSS" --timeout 120
  netem_off
  interop ipv4-iters3 --iters 3
else
  interop "ipv4-loss$LOSS" --sizes 1,1025,65536 --timeout 120
  netem_off
fi
if [ "${INTEROP_PAIRS:-1}" = 1 ]; then
  pairs "" "$SOFT" "$GIDX"
  # the first RDMA application, server on rxe (native provider) and client on the software device, and the reverse
  # (from each device's default GID, rxe's IPv4 one; the IPv6 pairs below pick rxe's IPv6 GID with --gid-index)
  pair demo.rxe-server rxe "jrdma demo server --device $RXE_DEV --port @PORT@" "jrdma demo client $RXE_IP4 --device $SOFT --port @PORT@"
  pair demo.soft-server soft "jrdma demo server --device $SOFT --port @PORT@" "jrdma demo client $SOFT_IP4 --device $RXE_DEV --port @PORT@"
fi
if [ "${INTEROP_IPV6:-1}" = 1 ]; then
# RoCEv2 over IPv6: the whole matrix both ways over the IPv6 GIDs, every ICRC of the capture recomputed
capture_on ipv6 "$RXE_IP6" "$SOFT_IP6"
IP=6 interop ipv6
capture_check ipv6
if [ "${INTEROP_PAIRS:-1}" = 1 ]; then
  pairs 6 "soft@[$SOFT_IP6]" "$GIDX6"
  # the mixed demo over the IPv6 GIDs: rxe's side sends from its IPv6 GID (--gid-index), the soft device named by its
  # IPv6 address sends from that address's GID by default; the TCP exchange stays on IPv4
  pair demo6.rxe-server rxe "jrdma demo server --device $RXE_DEV --gid-index $GIDX6 --port @PORT@" \
    "jrdma demo client $RXE_IP4 --device soft@[$SOFT_IP6] --port @PORT@"
  pair demo6.soft-server soft "jrdma demo server --device soft@[$SOFT_IP6] --port @PORT@" \
    "jrdma demo client $SOFT_IP4 --device $RXE_DEV --gid-index $GIDX6 --port @PORT@"
fi
# the link-local GIDs: rxe's default GID (index 0, its interface's fe80 address) and the soft device on its veth's
# fe80 address (the scope: the veth in jsoft), two sizes each way
link_local() { ip ${2:+-n "$2"} -6 addr show dev "$1" scope link | sed -nE 's/.*inet6 (fe80[^/]*).*/\1/p' | head -1; }
RXE_LL=$(link_local "$RXE_IF") SOFT_LL=$(link_local "$SOFT_IF" "$SOFT_NS")
if [ -n "$RXE_LL" ] && [ -n "$SOFT_LL" ]; then
  capture_on ipv6-link-local "$RXE_LL" "$SOFT_LL"
  IP=ll interop ipv6-link-local --sizes 0,1025
  capture_check ipv6-link-local
else
  fail=$((fail + 1)); summary+=("FAIL ipv6-link-local: no link-local address on $RXE_IF ($RXE_LL) or $SOFT_IF ($SOFT_LL)")
fi
# the GID table: the soft device on rxe's own interface (another port: rxe holds 4791) lists the GIDs rxe1 lists, at
# the same indexes and with the same types, so -x means the same on both
gid_lines() { grep -E '^[[:space:]]*GID\[' | sed -E 's/^[[:space:]]+//; s/[[:space:]]+/ /g'; }
t0=$SECONDS
ibv_devinfo -v -d "$RXE_DEV" | gid_lines > "$LOG_DIR/gids.rxe.txt"
side_run rxe "$LOG_DIR/gids.soft.log" jrdma devinfo -v -d "soft@$RXE_IP4:18999"; side_wait rxe 120
gid_lines < "$LOG_DIR/gids.soft.log" > "$LOG_DIR/gids.soft.txt"
echo "GID table of $RXE_DEV on $RXE_IF:"; sed 's/^/  /' "$LOG_DIR/gids.rxe.txt"
if [ -s "$LOG_DIR/gids.rxe.txt" ] && diff "$LOG_DIR/gids.rxe.txt" "$LOG_DIR/gids.soft.txt"; then
  pass=$((pass + 1)); summary+=("PASS GID table of soft@$RXE_IP4 = $RXE_DEV's for $RXE_IF ($(wc -l < "$LOG_DIR/gids.rxe.txt") entries, $((SECONDS - t0)) s)")
else
  fail=$((fail + 1)); summary+=("FAIL GID table of soft@$RXE_IP4 differs from $RXE_DEV's (diff above)")
fi
fi
sides_stop
echo "rxe hw_counters at the end:$(rxe_counters)"

echo "================ rxe <-> soft interop"
printf '%s\n' "${summary[@]}"
echo "passed $pass, failed $fail, skipped $skip (logs: $LOG_DIR)"
[ "$fail" -eq 0 ]
