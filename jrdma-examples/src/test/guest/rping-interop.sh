#!/usr/bin/env bash
# rping interop, inside the Soft-RoCE guest: rdma-core's `rping -s` with a `jrdma rping -c` client, then a
# `jrdma rping -s` server with an `rping -c` client, over rdma_cm on rxe0's address. Each client validates the data
# that came back (-V) and prints each ping (-v); a pair passes when both sides exit 0 and the client printed COUNT pings.
#
#   ./jrdma --help >/dev/null          # build on the host first
#   vm/run-in-guest --timeout 900 -- jrdma-examples/src/test/guest/rping-interop.sh
#
# Environment: ADDR (10.99.0.1), COUNT (5), SIZE (64), PORT (18700), LOG_DIR (jrdma-examples/target/rping).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../../.." && pwd)
cd "$repo" || exit 2
ADDR=${ADDR:-10.99.0.1} COUNT=${COUNT:-5} SIZE=${SIZE:-64} PORT=${PORT:-18700}
LOG_DIR=${LOG_DIR:-$repo/jrdma-examples/target/rping}
mkdir -p "$LOG_DIR"
command -v rping >/dev/null || { echo "rping-interop: rping (rdmacm-utils) is not installed here; run me in the guest" >&2; exit 2; }
[ -e /dev/infiniband/rdma_cm ] || { echo "rping-interop: no /dev/infiniband/rdma_cm here; run me in the guest" >&2; exit 2; }
JAVA_HOME=${JAVA_HOME:-$(bin/find-jdk)}
# jrdma rping without the CLI around it (the same code; starts faster under TCG)
JRPING="$JAVA_HOME/bin/java --enable-native-access=ALL-UNNAMED -XX:TieredStopAtLevel=1 -Xshare:auto -cp jrdma-cli/target/classes:$(cat jrdma-cli/target/classpath.txt) dev.jrdma.examples.Rping"
fail=0

check() { # NAME SERVER_RC CLIENT_RC CLIENT_LOG SERVER_LOG
  local pings
  pings=$(grep -c '^ping data: rdma-ping-' "$4")
  if [ "$2" -eq 0 ] && [ "$3" -eq 0 ] && [ "$pings" -eq "$COUNT" ]; then
    echo "PASS $1: $pings pings validated"; grep '^ping data' "$4" | head -1
  else
    echo "FAIL $1: server rc=$2 client rc=$3, $pings of $COUNT pings"
    echo "--- server:"; tail -20 "$5"; echo "--- client:"; tail -20 "$4"; fail=1
  fi
}

# rping server, jrdma client
timeout 120 rping -s -a "$ADDR" -p "$PORT" -C "$COUNT" -S "$SIZE" >"$LOG_DIR/rping-server.log" 2>&1 & spid=$!
sleep 1
timeout 120 $JRPING -c -a "$ADDR" -p "$PORT" -C "$COUNT" -S "$SIZE" -V -v >"$LOG_DIR/jrdma-client.log" 2>&1; crc=$?
wait $spid; src=$?
check "rping -s <- jrdma rping -c" "$src" "$crc" "$LOG_DIR/jrdma-client.log" "$LOG_DIR/rping-server.log"

# jrdma server, rping client
PORT=$((PORT + 1))
timeout 150 $JRPING -s -a "$ADDR" -p "$PORT" -C "$COUNT" -S "$SIZE" >"$LOG_DIR/jrdma-server.log" 2>&1 & spid=$!
for _ in $(seq 1 120); do grep -q 'listening' "$LOG_DIR/jrdma-server.log" && break; sleep 0.5; done
timeout 120 rping -c -a "$ADDR" -p "$PORT" -C "$COUNT" -S "$SIZE" -V -v >"$LOG_DIR/rping-client.log" 2>&1; crc=$?
wait $spid; src=$?
check "jrdma rping -s <- rping -c" "$src" "$crc" "$LOG_DIR/rping-client.log" "$LOG_DIR/jrdma-server.log"
exit $fail
