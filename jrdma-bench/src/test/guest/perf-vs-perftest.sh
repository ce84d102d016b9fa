#!/usr/bin/env bash
# C perftest pair against `jrdma perf` pair on one device, alternating in one run, and the table of both with the
# ratios (the native provider's speed against C, issue 12). Inside the Soft-RoCE guest:
#
#   ./jrdma --help >/dev/null                     # build on the host first (the guest's / is read-only)
#   vm/run-in-guest --timeout 2400 -- jrdma-bench/src/test/guest/perf-vs-perftest.sh
#
# For each case (write_lat 64 B, send_lat 64 B, write_bw 64 B, write_bw 64 KiB) and each of ROUNDS rounds: ib_X
# server + ib_X client, then jrdma perf server + jrdma perf client, same flags; the client's report line of each pair
# is kept. Table: per case the mean over the rounds of t_typical and 99% (latency) or MsgRate and BW average
# (bandwidth), perftest's, jrdma's, and jrdma/perftest.
# Environment: ROUNDS (2), LAT_ITERS (5000), BW64_ITERS (20000), BW64K_ITERS (1000), DEV (rxe0), GIDX (1),
# BASE_PORT (18700), LOG_DIR (jrdma-bench/target/perf-vs-perftest), CASES ("write_lat:64 send_lat:64 write_bw:64
# write_bw:65536"), JRDMA_JAVA_OPTS (-XX:+UseSerialGC: no GC threads competing for the guest's vCPUs).
# perftest calibrates its clock at start and under TCG that fails now and then (its report then says inf or
# "Can't produce a report"): such a perftest pair is run again, 4 tries at most.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../../.." && pwd)
cd "$repo" || exit 2

ROUNDS=${ROUNDS:-2}
LAT_ITERS=${LAT_ITERS:-5000}
BW64_ITERS=${BW64_ITERS:-20000}
BW64K_ITERS=${BW64K_ITERS:-1000}
DEV=${DEV:-rxe0}
GIDX=${GIDX:-1}
port=${BASE_PORT:-18700}
LOG_DIR=${LOG_DIR:-$repo/jrdma-bench/target/perf-vs-perftest}
CASES=${CASES:-"write_lat:64 send_lat:64 write_bw:64 write_bw:65536"}
JRDMA_JAVA_OPTS=${JRDMA_JAVA_OPTS:--XX:+UseSerialGC}

command -v ib_write_lat >/dev/null 2>&1 || { echo "perf-vs-perftest: perftest is not installed here; run me in the guest" >&2; exit 2; }
ibv_devices 2>/dev/null | grep -qw "$DEV" || { echo "perf-vs-perftest: no RDMA device $DEV here" >&2; exit 2; }
[ -f jrdma-cli/target/classpath.txt ] || { echo "perf-vs-perftest: build on the host first (./jrdma --help)" >&2; exit 2; }
ulimit -l unlimited 2>/dev/null || true
mkdir -p "$LOG_DIR"
JAVA_HOME=${JAVA_HOME:-$(bin/find-jdk)}
JRDMA=("$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED $JRDMA_JAVA_OPTS -cp "jrdma-cli/target/classes:$(cat jrdma-cli/target/classpath.txt)" dev.jrdma.cli.Jrdma perf)

wait_listen() {  # until something listens on TCP port $1 (without connecting: a server accepts one client only)
  local hex deadline=$((SECONDS + ${2:-120}))
  hex=$(printf '%04X' "$1")
  while [ $SECONDS -lt $deadline ]; do
    awk -v p=":$hex" '$2 ~ p"$" && $4 == "0A" {f=1} END {exit !f}' /proc/net/tcp /proc/net/tcp6 2>/dev/null && return 0
    sleep 0.2
  done
  return 1
}

# one pair; prints the client's report line ("" when there is none); $1 c|jrdma $2 test $3 size $4 iters $5 try
pair() {
  local who=$1 t=$2 size=$3 iters=$4 try=${5:-1} slog clog spid line
  port=$((port + 1))
  slog="$LOG_DIR/$t.$size.$who.r$round.t$try.server.log"; clog="${slog%.server.log}.client.log"
  local flags=(-d "$DEV" -x "$GIDX" -s "$size" -n "$iters" -p "$port")
  if [ "$who" = c ]; then
    timeout 600 "ib_$t" "${flags[@]}" >"$slog" 2>&1 & spid=$!
    wait_listen "$port" 60 || echo "server did not listen" >>"$slog"
    timeout 600 "ib_$t" "${flags[@]}" 127.0.0.1 >"$clog" 2>&1
  else
    timeout 900 "${JRDMA[@]}" "$t" "${flags[@]}" --timeout 60 --accept-timeout 300 >"$slog" 2>&1 & spid=$!
    wait_listen "$port" 300 || echo "server did not listen" >>"$slog"
    timeout 900 "${JRDMA[@]}" "$t" "${flags[@]}" --timeout 60 127.0.0.1 >"$clog" 2>&1
  fi
  wait "$spid"
  line=$(grep -E "^ *$size +[0-9]+ +[0-9.]+" "$clog" | tail -1)
  if [ "$who" = c ] && [ "$try" -lt 4 ] && { [ -z "$line" ] || grep -q "inf" <<<"$line"; }; then
    pair "$who" "$t" "$size" "$iters" $((try + 1))
    return
  fi
  echo "$line"
}

declare -A got
for ((round = 1; round <= ROUNDS; round++)); do
  for c in $CASES; do
    t=${c%%:*} size=${c##*:}
    case $t in
      *_lat) iters=$LAT_ITERS ;;
      *) if [ "$size" -ge 4096 ]; then iters=$BW64K_ITERS; else iters=$BW64_ITERS; fi ;;
    esac
    for who in c jrdma; do
      echo "[perf-vs-perftest] round $round: $who $t -s $size -n $iters ($(date +%T))" >&2
      line=$(pair "$who" "$t" "$size" "$iters")
      echo "round $round $t $size $iters $who: ${line:-NO REPORT}"
      got["$c|$who|$round"]=$line
    done
  done
done

echo
echo "================ C perftest pair vs jrdma perf pair on $DEV (GID $GIDX), $ROUNDS rounds alternating, means"
printf '%-16s %-20s %12s %12s %8s\n' case metric perftest jrdma ratio
for c in $CASES; do
  t=${c%%:*} size=${c##*:}
  if [[ $t == *_lat ]]; then cols="5:t_typical[us] 8:99%[us]"; else cols="5:MsgRate[Mpps] 4:BW_avg[MB/s]"; fi
  for col in $cols; do
    k=${col%%:*} name=${col#*:}
    mean() {  # the mean of column $k over the rounds of $1
      local who=$1 r s=0 n=0 v
      for ((r = 1; r <= ROUNDS; r++)); do
        v=$(awk -v k="$k" '{print $k}' <<<"${got["$c|$who|$r"]}")
        [[ $v =~ ^[0-9.]+$ ]] && { s=$(awk -v a="$s" -v b="$v" 'BEGIN{print a+b}'); n=$((n + 1)); }
      done
      [ $n -gt 0 ] && awk -v a="$s" -v n="$n" 'BEGIN{printf "%.4g", a/n}' || echo "-"
    }
    pc=$(mean c) jr=$(mean jrdma)
    ratio=$(awk -v a="$jr" -v b="$pc" 'BEGIN{ if (a+0 > 0 && b+0 > 0) printf "%.2f", a/b; else print "-" }')
    printf '%-16s %-20s %12s %12s %8s\n' "$t $size" "$name" "$pc" "$jr" "$ratio"
  done
done
echo "(ratio = jrdma / perftest: latency targets <= 1.05 (t_typical) and <= 2 (99%); message rate >= 0.95)"
echo "logs: $LOG_DIR"
