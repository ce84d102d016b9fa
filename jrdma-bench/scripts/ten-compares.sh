#!/bin/bash
# Issue 23 §5's steadiness series: consecutive default `jrdma perf compare` runs between two soft devices on one host
# (127.0.0.151 serves, 127.0.0.152 runs the client), each run under the bench lock when one is given.
#   jrdma-bench/scripts/ten-compares.sh OUTDIR [FIRST LAST]     (default runs 1 to 10; about 75 s a run)
# OUTDIR gets cliN.out / srvN.out per run and a log of start/end times with the load average.
# LOCK=/path/to/lockfile serializes the runs with other benchmarks (flock); JRDMA_JAVA_OPTS passes through.
set -u
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=$1; first=${2:-1}; last=${3:-10}
mkdir -p "$out"
cd "$root"
for r in $(seq "$first" "$last"); do
  port=$((20000 + RANDOM % 20000)); sp=$((30000 + RANDOM % 20000))
  run="echo \"run $r start \$(date -u +%T) load \$(cut -d' ' -f1 /proc/loadavg)\" >> '$out/log'
    JRDMA_SOFT_PORT=$sp ./jrdma perf compare -d soft@127.0.0.151 -p $port --timeout 60 --quiet > '$out/srv$r.out' 2>&1 &
    sleep 1.5
    JRDMA_SOFT_PORT=$sp timeout 300 ./jrdma perf compare -d soft@127.0.0.152 -p $port --timeout 60 --quiet 127.0.0.151 \
      > '$out/cli$r.out' 2>&1
    wait
    echo \"run $r end \$(date -u +%T) load \$(cut -d' ' -f1 /proc/loadavg)\" >> '$out/log'"
  if [ -n "${LOCK:-}" ]; then flock "$LOCK" bash -c "$run"; else bash -c "$run"; fi
done
