#!/usr/bin/env bash
# Inside the Soft-RoCE guest: why ib_read_bw against the software device as READ responder is slow. Runs ib_read_bw
# on rxe1 (requester) against `jrdma perf read_bw` on the soft device (responder) over the two-namespace set-up, in
# variants, and the reverse direction; prints for each the bandwidth, rxe's hw_counters that changed (rcvd_seq_err:
# a READ response arrived after a gap; completer_retry_err: rxe went back because of one; without rcvd_seq_err a
# retry was a timeout), the packets the kernel dropped in its input backlog (softnet_stat) and the soft counters.
# A diagnosis, not a pass/fail test.
#   vm/run-in-guest --timeout 1200 -- jrdma-soft/src/test/guest/read-bw-probe.sh
# Environment: ITERS (-n, default 100), VARIANTS (default plain u17 reverse reverse-u17; also o4, backlog, reverse-e; reverse*:
# jrdma perf read_bw on the soft device as requester against ib_read_bw on rxe, with the flags to jrdma perf).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../../.." && pwd)
cd "$repo" || exit 2
source "$here/two-ns.sh"
LOG_DIR=${LOG_DIR:-$repo/jrdma-soft/target/interop}
mkdir -p "$LOG_DIR"
JAVA_HOME=${JAVA_HOME:-$(bin/find-jdk)}
ITERS=${ITERS:-100}
JRDMA="$JAVA_HOME/bin/java --enable-native-access=ALL-UNNAMED -XX:TieredStopAtLevel=1 -Xshare:auto -Djrdma.perf.counters=true -Djrdma.perf.warmup=0 -cp jrdma-cli/target/classes:$(cat jrdma-cli/target/classpath.txt) dev.jrdma.cli.Jrdma"
two_ns_up || exit 1
trap two_ns_down EXIT
GIDX=$(gid_index "$RXE_DEV" "$RXE_IP4")
snap() { (cd /sys/class/infiniband/$RXE_DEV/ports/1/hw_counters && grep -H . * | tr ':' ' ') | sort; }
drops() { local s=0 a b rest; while read -r a b rest; do s=$((s + 16#$b)); done < /proc/net/softnet_stat; echo "$s"; }
# datagrams the soft device's socket lost because its receive buffer was full (Udp RcvbufErrors in namespace jsoft)
rcvbuf_errors() { ip netns exec "$SOFT_NS" awk '/^Udp:/ {n++} /^Udp:/ && n == 2 {print $6}' /proc/net/snmp; }
port=18700
run() { # NAME CLIENT_FLAGS
  local name=$1 flags=$2 s0 d0 t0=$SECONDS
  port=$((port + 1)); s0=$(snap); d0=$(drops); local u0; u0=$(rcvbuf_errors)
  if [[ $name == reverse* ]]; then
    timeout 300 ib_read_bw -d "$RXE_DEV" -x "$GIDX" -n "$ITERS" -p $port > "$LOG_DIR/probe.$name.server.log" 2>&1 & local spid=$!
    sleep 1
    ip netns exec "$SOFT_NS" timeout 300 $JRDMA perf read_bw -d "soft@$SOFT_IP4" -n "$ITERS" -p $port --timeout 120 $flags "$RXE_IP4" > "$LOG_DIR/probe.$name.client.log" 2>&1
    wait $spid
  else
    ip netns exec "$SOFT_NS" timeout 300 $JRDMA perf read_bw -d "soft@$SOFT_IP4" -n "$ITERS" -p $port --accept-timeout 200 > "$LOG_DIR/probe.$name.server.log" 2>&1 & local spid=$!
    wait_listen $port "$SOFT_NS"
    timeout 300 ib_read_bw -d "$RXE_DEV" -x "$GIDX" -n "$ITERS" -p $port $flags "$SOFT_IP4" > "$LOG_DIR/probe.$name.client.log" 2>&1
    wait $spid
  fi
  echo "== $name ($flags; $((SECONDS - t0)) s): $(grep -h -A1 '#bytes' "$LOG_DIR/probe.$name.client.log" | tail -1)"
  echo "$s0" > "$LOG_DIR/probe.$name.counters0"; snap > "$LOG_DIR/probe.$name.counters1" # (no /dev/fd in the guest for <(...))
  echo "   rxe counters changed: $(join "$LOG_DIR/probe.$name.counters0" "$LOG_DIR/probe.$name.counters1" | awk '$2 != $3 {printf " %s+%d", $1, $3 - $2}')"
  echo "   input backlog drops: $(( $(drops) - d0 )); soft socket buffer overflows: $(( $(rcvbuf_errors) - u0 )); $(grep -h '^counters of soft' "$LOG_DIR"/probe.$name.*.log)"
  grep -h -i 'error\|fail\|exc' "$LOG_DIR"/probe.$name.*.log | head -3
}
for v in ${VARIANTS:-plain u17 reverse reverse-u17}; do
  case $v in
    plain) run plain "" ;;
    o4) run o4 "-o 4" ;;
    u17) run u17 "-u 17" ;;
    backlog) old=$(sysctl -n net.core.netdev_max_backlog); sysctl -qw net.core.netdev_max_backlog=20000
             run backlog ""; sysctl -qw net.core.netdev_max_backlog="$old" ;;
    reverse) run reverse "" ;;
    reverse-u17) run reverse-u17 "-u 17" ;;
    reverse-e) run reverse-e "-u 17 -e" ;; # the soft requester waits on a completion channel: its poller drives no receives
  esac
done
