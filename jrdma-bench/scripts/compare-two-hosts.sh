#!/usr/bin/env bash
# `jrdma perf compare` between two hosts on one machine: two network namespaces joined by a veth pair, the path two
# machines take (the software device's same-host rings do not cross namespaces: every packet is a UDP datagram).
#
#   jrdma-bench/scripts/compare-two-hosts.sh [--mtu N] [--netem "loss 1% delay 100us"] [--java-opts "..."] [compare options...]
#
# e.g. compare-two-hosts.sh -n 20000 --sizes 64,4096,65536
#      compare-two-hosts.sh --netem "loss 1% delay 100us" --sizes 65536
#      compare-two-hosts.sh --java-opts -Djrdma.soft.gso=on --sizes 65536
# Needs root and iproute2 (ip netns, veth; sch_netem for --netem). Namespaces jrdma-h1 (server, 10.77.0.1) and
# jrdma-h2 (client, 10.77.0.2) are made for the run and removed at its end. The options after ours go to the client's
# `jrdma perf compare` (see jrdma-bench/README.md); the server gets the same -p and --timeout.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
mtu=9000 netem="" javaopts=""
while [ $# -gt 0 ]; do
  case "$1" in
    --mtu) mtu=$2; shift 2 ;;
    --netem) netem=$2; shift 2 ;;
    --java-opts) javaopts=$2; shift 2 ;;
    *) break ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "compare-two-hosts: needs root (ip netns)" >&2; exit 1; }
ns1=jrdma-h1 ns2=jrdma-h2 ip1=10.77.0.1 ip2=10.77.0.2
port=18515 timeout=120 i=1
for a in "$@"; do  # the server listens on the client's -p and waits as long
  case "$a" in -p|--port) eval "port=\${$((i + 1))}" ;; --timeout) eval "timeout=\${$((i + 1))}" ;; esac
  i=$((i + 1))
done
cleanup() {
  [ -n "${server:-}" ] && kill "$server" 2>/dev/null
  ip netns del "$ns1" 2>/dev/null || true
  ip netns del "$ns2" 2>/dev/null || true
}
trap cleanup EXIT
cleanup
"$root/jrdma" --version >/dev/null  # builds on first use, outside the namespaces
# the software device asks for 4 MiB socket buffers; the default cap (208 KiB) drops bursts (global, not per namespace)
sysctl -qw net.core.rmem_max=8388608 net.core.wmem_max=8388608
ip netns add "$ns1"
ip netns add "$ns2"
ip link add jh1 netns "$ns1" type veth peer name jh2 netns "$ns2"
ip -n "$ns1" addr add "$ip1/24" dev jh1
ip -n "$ns2" addr add "$ip2/24" dev jh2
for n in "$ns1:jh1" "$ns2:jh2"; do
  ip -n "${n%%:*}" link set "${n#*:}" mtu "$mtu" up
  ip -n "${n%%:*}" link set lo up
  [ -z "$netem" ] || ip netns exec "${n%%:*}" tc qdisc add dev "${n#*:}" root netem $netem
done
echo "two hosts: $ns1 $ip1 <-> $ns2 $ip2, veth MTU $mtu${netem:+, netem $netem on both ends}${javaopts:+, $javaopts}"
JRDMA_JAVA_OPTS="$javaopts" ip netns exec "$ns1" "$root/jrdma" perf compare -d "soft@$ip1" -p "$port" --timeout "$timeout" --quiet &
server=$!
JRDMA_JAVA_OPTS="$javaopts" ip netns exec "$ns2" "$root/jrdma" perf compare -d "soft@$ip2" "$@" "$ip1"
