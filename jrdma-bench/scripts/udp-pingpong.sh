#!/usr/bin/env bash
# The kernel's share of a 64 B ping-pong between two namespaces, in C (udp-pingpong.c; jrdma-bench/README.md, "Two
# namespaces: 64 B latency (helper lat18)"). Needs root, iproute2 and a C compiler.
#   jrdma-bench/scripts/udp-pingpong.sh [CONNECTED:MODE ...]   (default: 0:14 0:15 0:47 1:14 1:15 1:47)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bin=$(mktemp -d)/udp-pingpong
cc -O2 -o "$bin" "$here/udp-pingpong.c"
# shellcheck source=two-namespaces.sh
. "$here/two-namespaces.sh"
twons_up 9000
for spec in "${@:-0:14 0:15 0:47 1:14 1:15 1:47}"; do
  for cm in $spec; do
    twons_bg "$ns1" "$bin" server "$ip1" "$ip2" 4791 "${cm%:*}" "${cm#*:}" "${N:-100000}"
    sleep 0.3
    ip netns exec "$ns2" "$bin" client "$ip2" "$ip1" 4791 "${cm%:*}" "${cm#*:}" "${N:-100000}"
    wait "$twons_last" || true
  done
done
