#!/usr/bin/env bash
# perftest pair against `jrdma perf` pair, case by case, with what perf-vs-perftest.sh does not show: each pair's
# full logs, the rxe port's hw_counters that changed (completer_retry_err: the requester's retransmission timeouts)
# and the guest's CPU ticks (/proc/stat: user nice sys idle iowait irq softirq) over the pair. Inside the guest:
#
#   ./jrdma --help >/dev/null        # build on the host first
#   vm/run-in-guest --timeout 3000 -- jrdma-bench/src/test/guest/pairs-with-counters.sh
#
# Environment: CASES ("write_bw:64:20000 write_lat:64:5000 send_lat:64:5000 write_bw:65536:2000", TEST:SIZE:ITERS;
# a case listed twice runs twice), WHO ("c jrdma": the pairs of each case, in order), BASE_PORT (19100), LOG_DIR
# (jrdma-bench/target/pairs-with-counters), JOPTS (extra JVM flags of the jrdma pair). The jrdma pair runs with
# --timeout 120 (its warm-up and JIT wait take tens of seconds under TCG) and -XX:+UseSerialGC.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../../.." && pwd)
cd "$repo" || exit 2
JAVA_HOME=${JAVA_HOME:-$(bin/find-jdk)} || exit 2
export JAVA_HOME PATH="$JAVA_HOME/bin:$PATH"
ulimit -l unlimited 2>/dev/null || true
[ -f jrdma-cli/target/classpath.txt ] || { echo "pairs-with-counters: build on the host first (./jrdma --help)" >&2; exit 2; }
L=${LOG_DIR:-$repo/jrdma-bench/target/pairs-with-counters}
mkdir -p "$L"
J=("$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -XX:+UseSerialGC ${JOPTS:-} -cp "jrdma-cli/target/classes:$(cat jrdma-cli/target/classpath.txt)" dev.jrdma.cli.Jrdma perf)
HC=/sys/class/infiniband/rxe0/ports/1/hw_counters
counters() { for f in "$HC"/*; do echo "$(basename "$f") $(cat "$f")"; done; }
wait_listen() {  # until something listens on TCP port $1 (IPv4 or IPv6), at most $2 s
  local hex deadline=$((SECONDS + $2))
  hex=$(printf '%04X' "$1")
  while [ $SECONDS -lt $deadline ]; do
    awk -v p=":$hex" '$2 ~ p"$" && $4 == "0A" {f=1} END {exit !f}' /proc/net/tcp /proc/net/tcp6 2>/dev/null && return 0
    sleep 0.2
  done
  return 1
}
port=${BASE_PORT:-19100}
pair() {  # who test size iters
  local who=$1 t=$2 size=$3 n=$4 base s0 s1 t0 t1 sp
  port=$((port + 1))
  base=$L/$t.$size.$who.$port
  counters >"$base.c0"; s0=$(head -1 /proc/stat); t0=$(date +%s.%N)
  if [ "$who" = c ]; then
    timeout 900 "ib_$t" -d rxe0 -x 1 -s "$size" -n "$n" -p $port >"$base.server" 2>&1 & sp=$!
    wait_listen $port 300; timeout 900 "ib_$t" -d rxe0 -x 1 -s "$size" -n "$n" -p $port 127.0.0.1 >"$base.client" 2>&1
  else
    timeout 1200 "${J[@]}" "$t" -d rxe0 -x 1 -s "$size" -n "$n" -p $port --timeout 120 --accept-timeout 600 >"$base.server" 2>&1 & sp=$!
    wait_listen $port 600 || echo "server not listening" >>"$base.server"
    timeout 1200 "${J[@]}" "$t" -d rxe0 -x 1 -s "$size" -n "$n" -p $port --timeout 120 127.0.0.1 >"$base.client" 2>&1
  fi
  wait "$sp"; t1=$(date +%s.%N); s1=$(head -1 /proc/stat); counters >"$base.c1"
  echo "=== $who $t $size $n ($(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}') s, ends $(date +%T))"
  grep -E "^ *$size +[0-9]+ +[0-9.]+" "$base.client" | tail -1 || { echo "NO REPORT"; tail -3 "$base.client" "$base.server"; }
  grep -E 'Warm-up' "$base.client"
  echo " counters: $(join "$base.c0" "$base.c1" | awk '$3-$2 != 0 {printf " %s=%d", $1, $3-$2}')"
  echo " cpu ticks (user nice sys idle iowait irq softirq): $(echo "$s0 $s1" | awk '{for(i=2;i<=8;i++) printf "%d ", $(i+11)-$i}')"
}
echo "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
for c in ${CASES:-write_bw:64:20000 write_lat:64:5000 send_lat:64:5000 write_bw:65536:2000}; do
  IFS=: read -r t size n <<<"$c"
  for who in ${WHO:-c jrdma}; do pair "$who" "$t" "$size" "$n"; done
done
echo "logs: $L"
