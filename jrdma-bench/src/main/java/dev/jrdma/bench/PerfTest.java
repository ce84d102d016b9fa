package dev.jrdma.bench;

import java.util.Locale;

/** The benchmarks: perftest's eight RC tests, the two TCP baselines and the raw UDP floor. */
public enum PerfTest {
    /** {@code ib_send_lat}: send ping-pong latency. */
    SEND_LAT(Verb.SEND, true),
    /** {@code ib_write_lat}: RDMA write ping-pong latency (each side polls its buffer for the peer's write). */
    WRITE_LAT(Verb.WRITE, true),
    /** {@code ib_read_lat}: RDMA read latency (one read is a round trip). */
    READ_LAT(Verb.READ, true),
    /** {@code ib_atomic_lat}: atomic fetch-and-add latency (one atomic is a round trip). */
    ATOMIC_LAT(Verb.ATOMIC, true),
    /** {@code ib_send_bw}: send bandwidth and message rate. */
    SEND_BW(Verb.SEND, false),
    /** {@code ib_write_bw}: RDMA write bandwidth and message rate. */
    WRITE_BW(Verb.WRITE, false),
    /** {@code ib_read_bw}: RDMA read bandwidth and message rate. */
    READ_BW(Verb.READ, false),
    /** {@code ib_atomic_bw}: atomic fetch-and-add rate. */
    ATOMIC_BW(Verb.ATOMIC, false),
    /** TCP ping-pong latency, the socket baseline. */
    TCP_LAT(Verb.TCP, true),
    /** TCP stream bandwidth, the socket baseline. */
    TCP_BW(Verb.TCP, false),
    /** Raw UDP datagram ping-pong latency: the floor of the software device. */
    UDP_LAT(Verb.UDP, true),
    /** Raw UDP datagram bandwidth and rate: the floor of the software device. */
    UDP_BW(Verb.UDP, false);

    /** What one test operation is. */
    public enum Verb {
        /** RC send/receive. */
        SEND,
        /** RDMA write. */
        WRITE,
        /** RDMA read. */
        READ,
        /** Atomic fetch-and-add. */
        ATOMIC,
        /** A TCP socket's write and read. */
        TCP,
        /** A UDP datagram. */
        UDP
    }

    /** What one operation of the test is. */
    public final Verb verb;
    /** True for a latency test, false for a bandwidth test. */
    public final boolean latency;

    PerfTest(Verb verb, boolean latency) {
        this.verb = verb;
        this.latency = latency;
    }

    /** {@return whether it is a TCP baseline} */
    public boolean isTcp() {
        return verb == Verb.TCP;
    }

    /** {@return whether it is a raw UDP floor test} */
    public boolean isUdp() {
        return verb == Verb.UDP;
    }

    /** {@return whether it is a socket test (TCP or UDP): no RDMA device involved} */
    public boolean isSocket() {
        return verb == Verb.TCP || verb == Verb.UDP;
    }

    /** {@return the name on the command line, e.g. {@code send_lat}} */
    public String id() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** {@return perftest's program, e.g. {@code ib_send_lat}; null for the socket tests} */
    public String perftestName() {
        return isSocket() ? null : "ib_" + id();
    }

    /**
     * {@return what a measured interval is divided by: 2 for send and write (ping-pong), 1 for read and atomic (one
     * operation is a round trip), as perftest does}
     */
    public int rttFactor() {
        return verb == Verb.READ || verb == Verb.ATOMIC ? 1 : 2;
    }

    /** {@return the title perftest prints above its report, e.g. {@code Send Latency Test}} */
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

    /**
     * The test a command-line name names.
     *
     * @param s a name such as {@code send_lat}, {@code ib_send_lat} or {@code send-lat}, in any case
     * @return the test
     * @throws IllegalArgumentException when it names none (the message lists the names)
     */
    public static PerfTest parse(String s) {
        String t = s.toLowerCase(Locale.ROOT).replace('-', '_');
        if (t.startsWith("ib_")) t = t.substring(3);
        for (PerfTest p : values()) if (p.id().equals(t)) return p;
        throw new IllegalArgumentException(
                "unknown test '" + s + "': use one of send_lat, write_lat, read_lat, atomic_lat, "
                        + "send_bw, write_bw, read_bw, atomic_bw, tcp_lat, tcp_bw, udp_lat, udp_bw, compare");
    }
}
