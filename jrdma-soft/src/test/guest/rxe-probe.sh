#!/usr/bin/env bash
# Inside the Soft-RoCE guest: one write_lat exchange each way between kernel rxe and the software device over the
# two-namespace set-up (two-ns.sh), captured on the veth; prints both GID tables, the ICRC check of every captured
# packet (icrc-check.py), rxe's hw_counters and the software device's counters. A diagnosis, not a pass/fail test.
#   vm/run-in-guest --timeout 900 -- jrdma-soft/src/test/guest/rxe-probe.sh
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../../.." && pwd)
cd "$repo" || exit 2
source "$here/two-ns.sh"
LOG_DIR=${LOG_DIR:-$repo/jrdma-soft/target/interop}
mkdir -p "$LOG_DIR"
JAVA_HOME=${JAVA_HOME:-$(bin/find-jdk)}
JRDMA=${JRDMA:-"$JAVA_HOME/bin/java --enable-native-access=ALL-UNNAMED -XX:TieredStopAtLevel=1 -Djrdma.perf.counters=true -cp jrdma-cli/target/classes:$(cat jrdma-cli/target/classpath.txt) dev.jrdma.cli.Jrdma"}
two_ns_up || exit 1
echo "--- $RXE_DEV GID table"
for f in /sys/class/infiniband/$RXE_DEV/ports/1/gids/*; do
  g=$(cat "$f"); [ "$g" = 0000:0000:0000:0000:0000:0000:0000:0000 ] && continue
  echo "  $(basename "$f") $g $(cat /sys/class/infiniband/$RXE_DEV/ports/1/gid_attrs/types/$(basename "$f") 2>/dev/null) $(cat /sys/class/infiniband/$RXE_DEV/ports/1/gid_attrs/ndevs/$(basename "$f") 2>/dev/null)"
done
echo "--- soft device GID table (in $SOFT_NS)"
in_soft $JRDMA devinfo -v -d "soft@$SOFT_IP4" 2>&1 | grep -i gid
GIDX=$(gid_index "$RXE_DEV" "$RXE_IP4")
echo "rxe GID index for $RXE_IP4: $GIDX"
counters() { for f in /sys/class/infiniband/$RXE_DEV/ports/1/hw_counters/*; do v=$(cat "$f"); [ "$v" != 0 ] && printf ' %s=%s' "$(basename "$f")" "$v"; done; echo; }
echo "--- rxe counters before:$(counters)"
command -v tcpdump >/dev/null && { tcpdump -i "$RXE_IF" -w "$LOG_DIR/probe.pcap" -U -s 0 udp port 4791 2>/dev/null & tpid=$!; sleep 1; }
T=${TEST:-write_lat}
port=18700
for mode in ${MODES:-udp raw}; do
  J="$JRDMA"; J=${J/ -cp / -Djrdma.soft.ipv4.send=$mode -cp }
  port=$((port + 1))
  echo "=== [$mode] soft server (in $SOFT_NS) <- rxe client: $T"
  in_soft $J perf $T -d "soft@$SOFT_IP4" -n 5 -p $port --timeout 30 --accept-timeout 200 > "$LOG_DIR/$mode.1.server.log" 2>&1 & spid=$!
  wait_listen $port "$SOFT_NS" 150
  timeout 120 ib_$T -d "$RXE_DEV" -x "$GIDX" -n 5 -p $port "$SOFT_IP4" > "$LOG_DIR/$mode.1.client.log" 2>&1; echo "ib_$T client rc=$?"
  wait $spid; echo "jrdma server rc=$?"; tail -4 "$LOG_DIR/$mode.1.server.log"; tail -4 "$LOG_DIR/$mode.1.client.log"
  echo "--- rxe counters:$(counters)"
  port=$((port + 1))
  echo "=== [$mode] rxe server <- soft client (in $SOFT_NS): $T"
  timeout 240 ib_$T -d "$RXE_DEV" -x "$GIDX" -n 5 -p $port > "$LOG_DIR/$mode.2.server.log" 2>&1 & spid=$!
  wait_listen $port "" 150
  in_soft timeout 200 $J perf $T -d "soft@$SOFT_IP4" -n 5 -p $port --timeout 30 "$RXE_IP4" > "$LOG_DIR/$mode.2.client.log" 2>&1; echo "jrdma client rc=$?"
  wait $spid; echo "ib_$T server rc=$?"; tail -4 "$LOG_DIR/$mode.2.server.log"; tail -4 "$LOG_DIR/$mode.2.client.log"
  echo "--- rxe counters:$(counters)"
done
[ -n "${tpid:-}" ] && { sleep 1; kill "$tpid"; wait "$tpid" 2>/dev/null; python3 "$here/icrc-check.py" "$LOG_DIR/probe.pcap"; }
two_ns_down
