#!/usr/bin/env bash
cd /work/wt/lead
JAVA_HOME=$(bin/find-jdk); export JAVA_HOME PATH="$JAVA_HOME/bin:$PATH"
export MAVEN_OPTS="--sun-misc-unsafe-memory-access=allow"
ulimit -l unlimited
cp="jrdma-cli/target/classes:$(cat jrdma-cli/target/classpath.txt)"
rm -rf jrdma-connect/target/surefire-reports; t0=$SECONDS
mvn -B -ntp -o -pl jrdma-connect surefire:test -Dtest=CmServerTest,PeerIsolationTest -Djrdma.connect.timeoutMs=60000 -Djrdma.connect.test.device=rxe0 -Djrdma.connect.test.host=10.99.0.1 -Djrdma.cm.test.host=10.99.0.1 -Dsurefire.failIfNoSpecifiedTests=false 2>&1 | grep -E 'Tests run:|FAIL|ERROR\]' | head -20
echo "connect step: $((SECONDS-t0)) s"
rm -rf jrdma-connect/target/surefire-reports.old; mkdir -p /work/wt/lead/target-guest; cp -r jrdma-connect/target/surefire-reports /work/wt/lead/target-guest/ 2>/dev/null
t0=$SECONDS
java --enable-native-access=ALL-UNNAMED -cp "jrdma-connect/target/test-classes:$cp" dev.jrdma.connect.CmSmokeMain 10.99.0.1 2>&1 | tail -5
echo "smoke: rc=$? $((SECONDS-t0)) s"
t0=$SECONDS
./jrdma example echo --count 20 2>&1 | tail -3
echo "example echo: $((SECONDS-t0)) s"
