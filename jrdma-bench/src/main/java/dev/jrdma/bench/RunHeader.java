package dev.jrdma.bench;

import dev.jrdma.bench.PerftestWire.Dest;
import java.io.PrintStream;

/** The lines perftest prints before the results of an RDMA test: the run's settings, then each QP's address. */
final class RunHeader {
    private RunHeader() {}

    /** perftest's header: device, QPs, connection type, depths, MTU, link, GID index, inline size or reads, iterations. */
    static void print(PrintStream out, BenchResources r) {
        PerfOptions o = r.options;
        PerfTest test = r.test;
        out.println(Report.RESULT_LINE);
        // perftest names the atomic operation -A chose in the title
        String title = test.verb == PerfTest.Verb.ATOMIC
                ? test.title().replace("FETCH_AND_ADD", o.atomicType.name())
                : test.title();
        out.println("                    " + title);
        out.printf(" Device         : %s%n", r.deviceName);
        if (o.events) out.printf(" Test with events. Using %s's completion channel%n", r.deviceName);
        else if (o.pollBudgetMicros > 0)
            out.printf(
                    " Poll budget     : %d usec, then waits on %s's completion channel%n",
                    o.pollBudgetMicros, r.deviceName);
        out.printf(" Number of qps   : %d\t\tTransport type : IB%n", o.numQp);
        out.printf(" Connection type : %s\t\tUsing SRQ      : %s%n", o.connection, r.srq != null ? "ON" : "OFF");
        out.printf(" TX depth        : %d%n", o.effectiveTxDepth());
        if (o.postList > 1) out.printf(" Post List       : %d%n", o.postList);
        out.printf(" Mtu             : %d[B]%n", r.mtu.bytes);
        out.printf(" Link type       : %s%n", r.port.linkLayer().ibvName());
        if (r.gid != null) out.printf(" GID index       : %d%n", r.gidIndex);
        if (test.verb == PerfTest.Verb.READ || test.verb == PerfTest.Verb.ATOMIC)
            out.printf(" Outstand reads  : %d%n", r.outReads);
        else out.printf(" Max inline data : %d[B]%n", r.inline);
        out.printf(" rdma_cm QPs\t : %s%n", o.rdmaCm ? "ON" : "OFF");
        out.printf(
                " Data ex. method : %s%s%n",
                o.rdmaCm || o.rdmaCmExchange ? "rdma_cm" : "Ethernet",
                o.rdmaCm && o.tos >= 0 ? " \tTOS    : " + o.tos : "");
        if (o.durationSec > 0) out.printf(" Duration        : %d[s]%n", o.durationSec);
        else out.printf(" Iterations      : %d%n", o.effectiveIters());
        out.println(Report.RESULT_LINE);
    }

    /** Each of our QPs' address, then each of the peer's, as perftest's "local address" / "remote address" lines. */
    static void printAddresses(PrintStream out, BenchResources r) {
        for (int i = 0; i < r.options.numQp; i++) printAddress(out, "local", r.my[i]);
        for (int i = 0; i < r.options.numQp; i++) printAddress(out, "remote", r.rem[i]);
    }

    private static void printAddress(PrintStream out, String side, Dest d) {
        out.printf(
                " %s address: LID %#06x QPN %#06x PSN %#06x RKey %#08x VAddr %#016x%n",
                side, d.lid(), d.qpn(), d.psn(), d.rkey(), d.vaddr());
        if (d.gid() != null) {
            StringBuilder sb = new StringBuilder(" GID: ");
            for (int i = 0; i < 16; i++)
                sb.append(i > 0 ? ":" : "").append(String.format("%02d", d.gid().get(i) & 0xff));
            out.println(sb);
        }
    }
}
