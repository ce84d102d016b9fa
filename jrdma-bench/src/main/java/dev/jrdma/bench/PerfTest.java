package dev.jrdma.bench;

import java.util.Locale;

/** The benchmarks: perftest's eight RC tests, the two TCP baselines and the raw UDP floor. */
public enum PerfTest {
    SEND_LAT(Verb.SEND, true), WRITE_LAT(Verb.WRITE, true), READ_LAT(Verb.READ, true), ATOMIC_LAT(Verb.ATOMIC, true),
    SEND_BW(Verb.SEND, false), WRITE_BW(Verb.WRITE, false), READ_BW(Verb.READ, false), ATOMIC_BW(Verb.ATOMIC, false),
    TCP_LAT(Verb.TCP, true), TCP_BW(Verb.TCP, false),
    UDP_LAT(Verb.UDP, true), UDP_BW(Verb.UDP, false);

    /** What one test operation is. */
    public enum Verb { SEND, WRITE, READ, ATOMIC, TCP, UDP }

    public final Verb verb;
    public final boolean latency;

    PerfTest(Verb verb, boolean latency) {
        this.verb = verb;
        this.latency = latency;
    }

    public boolean isTcp() {
        return verb == Verb.TCP;
    }

    public boolean isUdp() {
        return verb == Verb.UDP;
    }

    /** A socket test (TCP or UDP): no RDMA device involved. */
    public boolean isSocket() {
        return verb == Verb.TCP || verb == Verb.UDP;
    }

    /** The name on the command line: {@code send_lat}. */
    public String id() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** perftest's program: {@code ib_send_lat}; null for the socket tests. */
    public String perftestName() {
        return isSocket() ? null : "ib_" + id();
    }

    /** perftest divides a round trip by 2 for send and write (ping-pong), not for read and atomic (one op is a round trip). */
    public int rttFactor() {
        return verb == Verb.READ || verb == Verb.ATOMIC ? 1 : 2;
    }

    /** The title perftest prints above its report. */
    public String title() {
        String op = switch (verb) {
            case SEND -> "Send";
            case WRITE -> "RDMA_Write";
            case READ -> "RDMA_Read";
            case ATOMIC -> "Atomic FETCH_AND_ADD";
            case TCP -> "TCP socket";
            case UDP -> "UDP datagram";
        };
        return op + (latency ? " Latency Test" : " BW Test");
    }

    public static PerfTest parse(String s) {
        String t = s.toLowerCase(Locale.ROOT).replace('-', '_');
        if (t.startsWith("ib_")) t = t.substring(3);
        for (PerfTest p : values()) if (p.id().equals(t)) return p;
        throw new IllegalArgumentException("unknown test '" + s + "': use one of send_lat, write_lat, read_lat, atomic_lat, "
                + "send_bw, write_bw, read_bw, atomic_bw, tcp_lat, tcp_bw, udp_lat, udp_bw, compare");
    }
}
