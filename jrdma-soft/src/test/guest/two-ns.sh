#!/usr/bin/env bash
# Two hosts inside the Soft-RoCE guest: kernel rxe on one end of a veth pair in the initial network namespace, the
# software device in a second namespace on the other end (its UDP 4791 does not collide with rxe's there; rdma_rxe
# in Linux 6.1 lives in the initial namespace only).
#
#   two-ns.sh up     creates it (idempotent), prints the variables below as shell assignments
#   two-ns.sh down   removes it
#   source two-ns.sh  defines the variables and the functions two_ns_up, two_ns_down, gid_index, in_soft, wait_listen
#
#   RXE_DEV=rxe1  RXE_IF=rxv0  RXE_IP4=10.98.0.1  RXE_IP6=fd98::1   (initial namespace)
#   SOFT_NS=jsoft SOFT_IF=rxv1 SOFT_IP4=10.98.0.2 SOFT_IP6=fd98::2  (namespace jsoft)
# Needs root, iproute2, the veth module (and sch_netem for loss: netem_loss PERCENT / netem_off).
RXE_DEV=${RXE_DEV:-rxe1} RXE_IF=${RXE_IF:-rxv0} RXE_IP4=${RXE_IP4:-10.98.0.1} RXE_IP6=${RXE_IP6:-fd98::1}
SOFT_NS=${SOFT_NS:-jsoft} SOFT_IF=${SOFT_IF:-rxv1} SOFT_IP4=${SOFT_IP4:-10.98.0.2} SOFT_IP6=${SOFT_IP6:-fd98::2}

two_ns_up() {
  modprobe veth 2>/dev/null
  modprobe sch_netem 2>/dev/null
  # the software device asks for 4 MiB socket buffers; the default cap (208 KiB) drops a burst of 1 MiB of packets
  # when the JVM under emulation drains its socket late (rmem_max is global, not per namespace)
  sysctl -qw net.core.rmem_max=8388608 net.core.wmem_max=8388608 2>/dev/null
  if ! ip link show "$RXE_IF" >/dev/null 2>&1; then
    ip netns add "$SOFT_NS" 2>/dev/null
    ip link add "$RXE_IF" type veth peer name "$SOFT_IF" || { echo "two-ns: cannot create the veth pair (module veth?)" >&2; return 1; }
    ip link set "$SOFT_IF" netns "$SOFT_NS" || return 1
    ip addr add "$RXE_IP4/24" dev "$RXE_IF" || return 1
    ip -6 addr add "$RXE_IP6/64" dev "$RXE_IF" nodad || return 1
    ip link set "$RXE_IF" up || return 1
    ip -n "$SOFT_NS" addr add "$SOFT_IP4/24" dev "$SOFT_IF" || return 1
    ip -n "$SOFT_NS" -6 addr add "$SOFT_IP6/64" dev "$SOFT_IF" nodad || return 1
    ip -n "$SOFT_NS" link set "$SOFT_IF" up || return 1
    ip -n "$SOFT_NS" link set lo up || return 1
  fi
  if [ ! -e "/sys/class/infiniband/$RXE_DEV" ]; then
    rdma link add "$RXE_DEV" type rxe netdev "$RXE_IF" || { echo "two-ns: rdma link add $RXE_DEV failed" >&2; return 1; }
  fi
  local i
  for i in $(seq 100); do  # the port turns ACTIVE and the link-local addresses appear asynchronously
    grep -q ACTIVE "/sys/class/infiniband/$RXE_DEV/ports/1/state" 2>/dev/null &&
      ip -6 addr show dev "$RXE_IF" | grep -q 'fe80.*scope link' &&
      ip -n "$SOFT_NS" -6 addr show dev "$SOFT_IF" | grep -q 'fe80.*scope link' &&
      ! ip -6 addr show dev "$RXE_IF" | grep -q tentative && break
    sleep 0.1
  done
  grep -q ACTIVE "/sys/class/infiniband/$RXE_DEV/ports/1/state" || { echo "two-ns: $RXE_DEV port 1 not ACTIVE" >&2; return 1; }
}

two_ns_down() {
  rdma link delete "$RXE_DEV" 2>/dev/null
  ip link del "$RXE_IF" 2>/dev/null
  ip netns del "$SOFT_NS" 2>/dev/null
  return 0
}

# gid_index DEV ADDR: the index of the GID for ADDR (an IPv4 address, or an IPv6 one written out in full as /sys
# lists it: fe80:0000:...) in DEV's GID table
gid_index() {
  local dev=$1 want=$2 f g
  if [[ $want =~ ^([0-9]+)\.([0-9]+)\.([0-9]+)\.([0-9]+)$ ]]; then
    want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" "${BASH_REMATCH[3]}" "${BASH_REMATCH[4]}")
  fi
  for f in "/sys/class/infiniband/$dev/ports/1/gids/"*; do
    g=$(cat "$f" 2>/dev/null) || continue
    [ "$g" = "$want" ] && { basename "$f"; return 0; }
  done
  return 1
}

# in_soft CMD...: runs CMD in the software device's namespace
in_soft() { ip netns exec "$SOFT_NS" "$@"; }

# wait_listen PORT [NS] [SECONDS]: until something listens on TCP PORT (in namespace NS), at most SECONDS (120), without
# connecting to it (a perftest or jrdma perf server accepts one client only)
wait_listen() {
  local hex deadline=$((SECONDS + ${3:-120})) run=()
  hex=$(printf '%04X' "$1"); [ -n "${2:-}" ] && run=(ip netns exec "$2")
  while [ $SECONDS -lt $deadline ]; do
    "${run[@]}" awk -v p=":$hex" '$2 ~ p"$" && $4 == "0A" {f=1} END {exit !f}' /proc/net/tcp /proc/net/tcp6 2>/dev/null && return 0
    sleep 0.2
  done
  return 1
}

netem_loss() { tc qdisc replace dev "$RXE_IF" root netem loss "$1%" && in_soft tc qdisc replace dev "$SOFT_IF" root netem loss "$1%"; }
netem_off() { tc qdisc del dev "$RXE_IF" root 2>/dev/null; in_soft tc qdisc del dev "$SOFT_IF" root 2>/dev/null; return 0; }

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  case "${1:-}" in
    up) two_ns_up || exit 1
        for v in RXE_DEV RXE_IF RXE_IP4 RXE_IP6 SOFT_NS SOFT_IF SOFT_IP4 SOFT_IP6; do echo "$v=${!v}"; done ;;
    down) two_ns_down ;;
    *) sed -n '2,14s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
  esac
fi
