#!/usr/bin/env bash
# `jrdma perf compare` between two hosts on one machine: two network namespaces joined by a veth pair, the path two
# machines take (the software device's same-host rings do not cross namespaces: every packet is a UDP datagram).
#
#   jrdma-bench/scripts/compare-two-hosts.sh [--mtu N] [--netem "loss 1% delay 100us"] [--java-opts "..."]
#                                            [--test TEST] [options...]
#
# e.g. compare-two-hosts.sh -n 20000 --sizes 64,4096,65536
#      compare-two-hosts.sh --netem "loss 1% delay 100us" --sizes 65536
#      compare-two-hosts.sh --java-opts -Djrdma.soft.gso=off --sizes 65536   # every packet as to rxe (raw socket)
#      compare-two-hosts.sh --netem "loss 1% delay 100us" --test write_bw -n 1000   # one perf test, both sides
# Needs root and iproute2 (ip netns, veth; sch_netem for --netem). The namespaces (jrdma-h1-ID serves, jrdma-h2-ID
# measures; ID from this run's PID, so runs at once do not meet: two-namespaces.sh) are made for the run and removed
# at its end, however it ends. Without --test the options after ours go to the client's `jrdma perf compare` (see
# jrdma-bench/README.md) and the server gets the same -p and --timeout; with --test TEST both sides run
# `jrdma perf TEST` with all of them (perftest's rule: both sides get the same flags). With --netem each end's qdisc
# counters (sent, dropped: netem's losses) are printed at the end. JRDMA_JAVA_OPTS from the environment (the QEMU
# guest's JVM flags) stay, --java-opts are added to them.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
mtu=9000 netem="" javaopts="" test=""
while [ $# -gt 0 ]; do
  case "$1" in
    --mtu) mtu=$2; shift 2 ;;
    --netem) netem=$2; shift 2 ;;
    --java-opts) javaopts=$2; shift 2 ;;
    --test) test=$2; shift 2 ;;
    *) break ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "compare-two-hosts: needs root (ip netns)" >&2; exit 1; }
port=18515 timeout=120 i=1
for a in "$@"; do  # the server listens on the client's -p and waits as long
  case "$a" in -p|--port) eval "port=\${$((i + 1))}" ;; --timeout) eval "timeout=\${$((i + 1))}" ;; esac
  i=$((i + 1))
done
"$root/jrdma" --version >/dev/null  # builds on first use, outside the namespaces
# shellcheck source=two-namespaces.sh
. "$here/two-namespaces.sh"
# the software device asks for 4 MiB socket buffers; the default cap (208 KiB) drops bursts (global, not per namespace)
sysctl -qw net.core.rmem_max=8388608 net.core.wmem_max=8388608
twons_up "$mtu"
if [ -n "$netem" ]; then
  ip netns exec "$ns1" tc qdisc add dev "$dev1" root netem $netem
  ip netns exec "$ns2" tc qdisc add dev "$dev2" root netem $netem
fi
echo "two hosts: $ns1 $ip1 <-> $ns2 $ip2, veth MTU $mtu${netem:+, netem $netem on both ends}${javaopts:+, $javaopts}"
export JRDMA_JAVA_OPTS="${JRDMA_JAVA_OPTS:-} $javaopts"
if [ -z "$test" ]; then
  twons_bg "$ns1" "$root/jrdma" perf compare -d "soft@$ip1" -p "$port" --timeout "$timeout" --quiet
  ip netns exec "$ns2" "$root/jrdma" perf compare -d "soft@$ip2" "$@" "$ip1"
else
  twons_bg "$ns1" "$root/jrdma" perf "$test" -d "soft@$ip1" --timeout "$timeout" "$@"
  server=$twons_last
  ip netns exec "$ns2" "$root/jrdma" perf "$test" -d "soft@$ip2" --timeout "$timeout" "$@" "$ip1"
  wait "$server" || true # the server prints its side (and its counters) as it ends
fi
# datagrams a full socket buffer dropped (not on the wire: in the receiving kernel), per namespace
for n in "$ns2:client" "$ns1:server"; do
  echo "udp on the ${n##*:}'s end: $(ip netns exec "${n%%:*}" awk '/^Udp:/ { if (!h) { split($0, k); h = 1 } else for (i = 2; i <= NF; i++) if (k[i] ~ /InDatagrams|InErrors|RcvbufErrors|SndbufErrors/) printf "%s %s ", k[i], $i }' /proc/net/snmp)"
done
if [ -n "$netem" ]; then
  for n in "$ns2:$dev2:client" "$ns1:$dev1:server"; do
    echo "netem on the ${n##*:}'s end ($(cut -d: -f2 <<<"$n")): $(ip netns exec "${n%%:*}" tc -s qdisc show dev "$(cut -d: -f2 <<<"$n")" | tr -s ' \n' ' ')"
  done
fi
