#!/usr/bin/env bash
# Inside the Soft-RoCE guest: issue 23's runs between two network namespaces that need the kernel's traffic control
# (netem, tbf, RED, fq_codel: build machines may lack them, the guest's Debian kernel has them as modules) and
# issue 24's netty-bench on kernel rxe0, in one boot. Build on the host first (mvn -DskipTests package, then
# vm/make-aot-caches: the JVMs start from its cache, C1 only, as bin/test-in-guest's do):
#
#   vm/run-in-guest --timeout 3000 -- jrdma-bench/src/test/guest/two-namespaces-in-guest.sh
#
# Environment: STEPS ("modules netem share netty"), NETEM ("loss 1% delay 100us", on both veth ends), ITERS (500
# 64 KiB messages per netem run), RATE (share-bottleneck.sh's --rate, "auto"), SOFT_OPTS (its --soft-opts, "-u 18":
# a 1 s ACK timeout, as under TCG a starved receiver thread otherwise makes the default 67 ms expire and the sender
# go back N with nothing lost), CC_RUNS (its --cc runs, separated by ';': "on;off"), SHARE_OPTS (more of its
# options, no quotes),
# SHARE_RUNS (instead of CC_RUNS and SOFT_OPTS: entries separated by ';', each CC|SOFT_OPTS, one bottleneck run per
# entry, e.g. 'on|-u 18;on|-u 18 --poll-budget 20;off|-u 18 --poll-budget 20': spinning against waiting; the default
# when none of the three is set, with '--soft-iters 2000 --first tcp' before SHARE_OPTS),
# NETTY_OPTS (netty-bench's options), NETEM_RUNS (the netem step's runs, separated by ';', each NAME:TEST:JAVA_OPTS;
# by default selective repeat, go-back-N and tcp_bw). Under TCG only the ratios inside one run mean anything.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../../.." && pwd)
cd "$repo" || exit 2
JAVA_HOME=${JAVA_HOME:-$(bin/find-jdk)} || exit 2
export JAVA_HOME PATH="$JAVA_HOME/bin:$PATH" JRDMA_NO_BUILD=1
ulimit -l unlimited 2>/dev/null || true
cli_jar=$(ls jrdma-cli/target/jrdma-cli-*.jar 2>/dev/null | grep -v -e '-sources\.jar$' -e '-javadoc\.jar$' | head -1)
c1=-XX:TieredStopAtLevel=1
if [ -n "$cli_jar" ] && [ -s target/guest-aot/cli.aot ] && [ -z "$(find "$cli_jar" -newer target/guest-aot/cli.aot)" ]; then
  export JRDMA_CLI_JAR=1 JRDMA_JAVA_OPTS="-XX:AOTCache=$repo/target/guest-aot/cli.aot $c1"
else
  echo "== no fresh target/guest-aot/cli.aot (vm/make-aot-caches): the JVMs start without it"
  export JRDMA_JAVA_OPTS=$c1
fi
steps=${STEPS:-modules netem share netty}
netem=${NETEM:-loss 1% delay 100us} iters=${ITERS:-500}
s=jrdma-bench/scripts
has() { [[ " $steps " == *" $1 "* ]]; }
echo "== guest: kernel $(uname -r), $(nproc) vCPUs, steps: $steps"

if has modules; then
  echo "== modules (modprobe; built in when in modules.builtin)"
  for m in veth sch_netem sch_tbf sch_red sch_fq_codel sch_ingress cls_u32 act_gact; do
    if grep -q "/$m.ko" "/lib/modules/$(uname -r)/modules.builtin" 2>/dev/null; then echo "  $m: built in"
    elif modprobe "$m" 2>/dev/null; then echo "  $m: loaded"
    else echo "  $m: MISSING ($(modprobe "$m" 2>&1 | head -1))"; fi
  done
fi

if has netem; then
  # 64 KiB write_bw over a lossy, delayed veth: selective repeat (the default between jrdma peers), go-back-N (both
  # peers out of the mode), tcp_bw
  echo "== netem '$netem' on both ends, -n $iters 64 KiB messages (16 packets each at the soft device's 4096 B MTU)"
  IFS=';' read -ra runs <<<"${NETEM_RUNS:-selective repeat (default):write_bw:;go-back-N:write_bw:-Djrdma.soft.selectiveRepeat=false;TCP:tcp_bw:}"
  for run in "${runs[@]}"; do
    IFS=: read -r name test opts <<<"$run"
    out=$(mktemp)
    t0=$SECONDS
    $s/compare-two-hosts.sh --netem "$netem" --java-opts "-Djrdma.perf.warmup=0 -Djrdma.perf.counters=true $opts" \
      --test "$test" -n "$iters" -s 65536 --timeout 300 >"$out" 2>&1
    rc=$?
    echo "-- $name ($test $opts): rc $rc, $((SECONDS - t0)) s"
    grep -E '^ *65536 +[0-9]+ |^counters of|^netem on|Exception|rror' "$out" | sort -u | sed 's/^/   /'
    # lost = what the client's device sent less what the server's device received (netem's "dropped" counts a GSO
    # batch of up to 16 packets as one drop, and its "Sent" counts the tests' out-of-band TCP segments too); the
    # server's rx_duplicate_request are resends of packets it had (spurious)
    [ "$test" = write_bw ] && awk -v n="$iters" '
      function val(name,   i, a) { for (i = 1; i <= NF; i++) if (index($i, name "=") == 1) { split($i, a, "="); return a[2] } }
      /^counters of .*\.2:/ { tx = val("tx_packets") }
      /^counters of .*\.1:/ { rx = val("rx_packets"); dup = val("rx_duplicate_request") }
      /^netem on the client/ { for (i = 1; i <= NF; i++) if ($i == "(dropped") { drops = $(i + 1); sub(/,/, "", drops) } }
      END { if (tx == "" || rx == "") exit; u = 16 * n; lost = tx - rx
        printf "   data packets: %d sent, %d needed, %d resent; %d arrived: %d lost (netem drops %d, a GSO batch one), %d arrived twice; resent/lost %.2f\n",
          tx, u, tx - u, rx, lost, drops, dup, (lost > 0 ? (tx - u) / lost : 0) }' "$out"
    # -Djrdma.soft.logTimeouts=true in a run's options: each retransmission timeout is a line (Completer.logTimeout);
    # the first ones, and a summary of why the timer fired
    if grep -q '^timeout ' "$out"; then
      grep '^timeout ' "$out" | head -12 | sed 's/^/   /'
      grep '^timeout ' "$out" | awk '
        { n++; if ($3 > $4) late++; l[n] = $3; q[n] = $7; if ($9 > 0 && $9 < $10) below++; if ($9 == 0) nogap++; st[$11]++
          p[n] = $4; r[n] = $5 + 4 * $6; g[n] = $8 - $9 }
        function med(a,   i, j, t, m) { m = n; for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }; return a[int((m + 1) / 2)] }
        END { printf "   timeouts: %d (%d more than a period late; median lateness %d us), %d with the oldest NAKed and fewer kept than the threshold, %d with no gap reported; median period %d us, median srtt+4rttvar %d us, median since progress %d us, median unreported in flight %d; requester stopped:", n, late, med(l), below, nogap, med(p), med(r), med(q), med(g)
              for (s in st) printf " %s %d", s, st[s]; printf "\n" }'
    fi
    rm -f "$out"
  done
fi

if has share; then
  echo "== one soft write_bw and one TCP flow through one bottleneck"
  share_defaults=""
  if [ -z "${SHARE_RUNS:-}" ] && [ -z "${CC_RUNS:-}" ] && [ -z "${SOFT_OPTS:-}" ]; then
    # by default the soft side spinning and waiting, DCQCN on, then waiting with DCQCN off (guest21: with TCP started
    # first both shared evenly, Jain 1.000 at 96%); -n instead of -D (perf refuses -D with --poll-budget)
    SHARE_RUNS='on|-u 18;on|-u 18 --poll-budget 20;off|-u 18 --poll-budget 20'
    share_defaults='--soft-iters 2000 --first tcp'
  fi
  if [ -n "${SHARE_RUNS:-}" ]; then
    # one share-bottleneck.sh per entry, each CC|SOFT_OPTS: the soft side's perf flags differ by run (spinning on the
    # CQ, the default, against --poll-budget: spin that long after a completion, then wait on the channel)
    IFS=';' read -ra entries <<<"$SHARE_RUNS"
    for entry in "${entries[@]}"; do
      echo "-- congestion control ${entry%%|*}, soft perf flags '${entry#*|}'"
      # shellcheck disable=SC2086
      $s/share-bottleneck.sh --rate "${RATE:-auto}" --soft-opts "${entry#*|}" --cc "${entry%%|*}" $share_defaults ${SHARE_OPTS:-}
      echo "-- rc $?"
    done
  else
    cc=()
    IFS=';' read -ra specs <<<"${CC_RUNS:-on;off}"
    for spec in "${specs[@]}"; do cc+=(--cc "$spec"); done
    # shellcheck disable=SC2086
    $s/share-bottleneck.sh --rate "${RATE:-auto}" --soft-opts "${SOFT_OPTS:--u 18}" "${cc[@]}" ${SHARE_OPTS:-}
    echo "-- rc $?"
  fi
fi

if has netty; then
  # kernel rxe0 (rdma_cm; one address, 10.99.0.1, for both sides) against Netty epoll and NIO over TCP to the same
  # address, in one JVM; send_lat is left out (its row is the software device's)
  echo "== netty-bench on rxe0"
  JRDMA_DEVICE=rxe0 JRDMA_JAVA_OPTS="$JRDMA_JAVA_OPTS -Djrdma.connect.timeoutMs=60000" ./jrdma netty-bench \
    --server-host 10.99.0.1 --client-host none --transports epoll,nio,jrdma,endpoint ${NETTY_OPTS:--n 2000 --warmup 500 -D 3}
  echo "-- rc $?"
fi
