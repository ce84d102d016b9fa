#!/usr/bin/env bash
# Issue 12's guest run in one go, inside the Soft-RoCE guest: the native provider's tests on rxe0 and the
# conformance suite's concurrent-close and data-path tests on rxe0 (the data path's gates changed), then
# perf-vs-perftest.sh (C perftest pair against `jrdma perf` pair, alternating) with long runs, so the JIT is done
# long before the end. Build on the host first:
#
#   ./jrdma --help >/dev/null && mvn -B -ntp -pl jrdma-native,jrdma-conformance -am test-compile
#   vm/run-in-guest --timeout 3600 -- jrdma-bench/src/test/guest/native-vs-perftest.sh
#
# Environment: SKIP_TESTS=1 runs the comparison only; the comparison's own variables (ROUNDS, LAT_ITERS, ...; see
# perf-vs-perftest.sh) default here to one round, 20,000 latency and 64 B iterations and 2,000 of 64 KiB.
# Output: the tests' counts, every pair's report line and the table; the logs under
# jrdma-bench/target/perf-vs-perftest.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../../.." && pwd)
cd "$repo" || exit 2
JAVA_HOME=${JAVA_HOME:-$(bin/find-jdk)} || exit 2
export JAVA_HOME PATH="$JAVA_HOME/bin:$PATH"
export MAVEN_OPTS="${MAVEN_OPTS:-} --sun-misc-unsafe-memory-access=allow"
ulimit -l unlimited 2>/dev/null || true
failed=0
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  for step in "jrdma-native -Djrdma.native.device=rxe0 -Djrdma.skipLayoutTest=true" \
              "jrdma-conformance -Djrdma.test.device=rxe0 -Dtest=ConcurrentCloseTest,DataPathTest -Dsurefire.failIfNoSpecifiedTests=false"; do
    read -r -a args <<<"$step"
    echo "== native-vs-perftest: tests ${args[*]} ($(date +%T))"
    rm -rf "${args[0]}/target/surefire-reports"
    mvn -B -ntp -o -q -pl "${args[0]}" surefire:test "${args[@]:1}" 2>&1 | grep -E 'Tests run:|FAIL|ERROR\]' | grep -v '^\[ERROR\] *$' | head -40
    if [ "${PIPESTATUS[0]}" -ne 0 ]; then failed=1; echo "== native-vs-perftest: FAILED: ${args[0]}"; else echo "== native-vs-perftest: ok: ${args[0]}"; fi
  done
fi
echo "== native-vs-perftest: perftest vs jrdma perf ($(date +%T))"
ROUNDS=${ROUNDS:-1} LAT_ITERS=${LAT_ITERS:-20000} BW64_ITERS=${BW64_ITERS:-20000} BW64K_ITERS=${BW64K_ITERS:-2000} \
  "$here/perf-vs-perftest.sh" || failed=1
echo "== native-vs-perftest: done ($(date +%T))"
exit $failed
