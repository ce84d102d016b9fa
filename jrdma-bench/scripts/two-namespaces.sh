# Sourced by compare-two-hosts.sh and share-bottleneck.sh: two network namespaces joined by a veth pair, the path two
# machines take, made for one run and removed on every way out of it (the end, an error, Ctrl-C, SIGTERM, SIGHUP).
# Names and addresses come from the run's PID, so several runs at once (on one machine, or in one QEMU guest) do not
# meet: namespaces jrdma-h1-ID (serves) and jrdma-h2-ID (measures), veth ends jh1-ID and jh2-ID, addresses 10.A.B.1
# and 10.A.B.2 (A.B from ID). Needs root and iproute2.
#
#   twons_up MTU      makes them; sets ns1 ns2 dev1 dev2 ip1 ip2
#   twons_bg NS CMD   runs CMD in NS in the background, remembered (twons_pids, the last in twons_last) so that the
#                     cleanup ends it
#   twons_down        ends what twons_bg started and every process left in the namespaces, removes them, then runs
#                     the script's twons_on_down if it defines one (the EXIT trap; INT, TERM and HUP exit through it)

twons_made=() twons_pids=()

twons_up() {
  local mtu=$1 id=$$ n
  # a namespace left by a run that was killed hard (SIGKILL: no trap) may hold this PID's names: take the next
  for _ in 1 2 3 4 5 6 7 8; do
    [ -e "/run/netns/jrdma-h1-$id" ] || [ -e "/run/netns/jrdma-h2-$id" ] || break
    id=$((id + 100000))
  done
  ns1=jrdma-h1-$id ns2=jrdma-h2-$id dev1=jh1-$id dev2=jh2-$id # interface names: at most 15 characters
  ip1=10.$((id / 256 % 200 + 20)).$((id % 256)).1 ip2=10.$((id / 256 % 200 + 20)).$((id % 256)).2
  trap twons_down EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  trap 'exit 129' HUP
  for n in "$ns1" "$ns2"; do
    ip netns add "$n" # fails (and the run ends) when the name is taken: only what this run made is removed
    twons_made+=("$n")
  done
  ip link add "$dev1" netns "$ns1" type veth peer name "$dev2" netns "$ns2"
  ip -n "$ns1" addr add "$ip1/24" dev "$dev1"
  ip -n "$ns2" addr add "$ip2/24" dev "$dev2"
  for n in "$ns1:$dev1" "$ns2:$dev2"; do
    ip -n "${n%%:*}" link set "${n#*:}" mtu "$mtu" up
    ip -n "${n%%:*}" link set lo up
  done
}

# twons_bg NS CMD...: CMD in NS in the background; its PID in $twons_last
twons_bg() {
  local n=$1
  shift
  ip netns exec "$n" "$@" &
  twons_last=$!
  twons_pids+=("$twons_last")
}

twons_down() {
  local rc=$? p n
  trap - EXIT INT TERM HUP
  for p in "${twons_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for n in "${twons_made[@]}"; do
    for p in $(ip netns pids "$n" 2>/dev/null); do kill "$p" 2>/dev/null || true; done
  done
  for p in "${twons_pids[@]}"; do wait "$p" 2>/dev/null || true; done
  for n in "${twons_made[@]}"; do
    for p in $(ip netns pids "$n" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
    ip netns del "$n" 2>/dev/null || true
  done
  twons_made=() twons_pids=()
  ! declare -F twons_on_down >/dev/null || twons_on_down # the script's own cleanup, if it has one
  exit "$rc"
}
