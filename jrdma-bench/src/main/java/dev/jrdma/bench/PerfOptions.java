package dev.jrdma.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The flags of {@code jrdma perf TEST [flags] [HOST]}: perftest's names and defaults, so a command line that works
 * with {@code ib_send_lat} works here.
 */
public final class PerfOptions {
    /** perftest's default port of the out-of-band exchange (-p). */
    public static final int DEFAULT_TCP_PORT = 18515;
    /** The largest message size, in bytes: 8 MiB, perftest's largest -a size (2^23). */
    public static final int MAX_SIZE = 1 << 23;
    /** The largest UDP payload over IPv4 (65535 - 20 IP - 8 UDP header bytes). */
    public static final int MAX_UDP_SIZE = 65507;
    /** udp_bw's default datagram size: a page, the soft device's MTU on loopback. */
    public static final int DEFAULT_UDP_BW_SIZE = 4096;

    /** The test to run (null for compare and --help). */
    public PerfTest test;
    /** True for {@code jrdma perf compare}. */
    public boolean compare;
    /** -d: the RDMA device's name, or null for the first one. */
    public String device;
    /** -i: the device port, from 1 (default 1). */
    public int ibPort = 1;
    /** -x: the GID index, or -1 for the device's RoCE v2 GID (perftest's default). */
    public int gidIndex = -1;
    /** -s: the message size in bytes, or -1 for the default ({@link #effectiveSize()}). */
    public int size = -1;
    /** -a: every size from 2 to 2^23 ({@link #runSizes()}). */
    public boolean all;
    /** -n: the iterations, or -1 for the default ({@link #effectiveIters()}). */
    public long iters = -1;
    /** -D: run for this many seconds instead of -n iterations; 0: use -n. */
    public int durationSec;
    /** -p: the TCP port of the out-of-band exchange. */
    public int tcpPort = DEFAULT_TCP_PORT;
    /** -t: the send queue depth, or -1 for the default ({@link #effectiveTxDepth()}). */
    public int txDepth = -1;
    /** -q: the number of QPs of a bandwidth test (default 1). */
    public int numQp = 1;
    /** --report_gbits: bandwidth in Gb/sec instead of MB/sec. */
    public boolean reportGbits;
    /** The server's host (the client's only positional argument after the test); null: this side is the server. */
    public String host;
    /** Seconds allowed for connecting and for each wait on the peer without progress. */
    public int timeoutSec = 10;
    /** compare: message sizes; null = default list. */
    public List<Integer> sizes;
    /** compare: the series to run, by id ({@code write_bw}, {@code tcp_lat_busy_poll}, ...); null = all. */
    public List<String> compareTests;
    /**
     * compare's bandwidth clients: the timed loop lasts at least this many nanoseconds (0: -n, as perftest). write_bw
     * and read_bw run rounds of -n messages until it has passed and report them all; send_bw, whose server counts the
     * messages, sizes its loop by its warm-in's rate and agrees the count with the server in it. Not a flag.
     */
    public long minTimedNs;
    /**
     * compare's RDMA latency points: the loop first runs this many unreported iterations with the peer, on the same QPs
     * and in the same loop as the timed ones (both sides compare processes, so both run them). Not a flag;
     * {@code -Djrdma.perf.warmIn=N} gives a {@code jrdma perf} latency test one (on both sides), as compare's.
     */
    public long warmInIters = Long.getLong("jrdma.perf.warmIn", 0L);
    /** compare: the HTML report (null = jrdma-compare.html in the working directory). */
    public String html;
    /** -h/--help: print {@link #usage()} and run nothing. */
    public boolean help;
    /** Seconds a server waits for its client to connect (0 = for ever, as perftest). */
    public int acceptTimeoutSec;
    /** -u/--qp-timeout: the QPs' local ACK timeout exponent (4.096 us x 2^N), 14 as perftest's default. */
    public int qpTimeout = 14;
    /** Print no progress line even on a terminal. */
    public boolean quiet;
    /** tcp_lat: spin on a non-blocking socket instead of blocking in read (the UDP tests always spin). */
    public boolean busyPoll;
    /** -c: the QP type, RC (default) or UD (send_lat and send_bw only, as perftest). */
    public Connection connection = Connection.RC;
    /** -e: wait for completions on a completion channel instead of spinning on the CQ. */
    public boolean events;
    /**
     * --poll-budget: a bandwidth loop spins on its CQs for this long after its last completion, then waits on a
     * completion channel (0: spins for ever, as perftest). A compare server's send_bw points take {@code
     * Compare#SEND_BW_POLL_BUDGET_MICROS} (0 unless set).
     */
    public int pollBudgetMicros;
    /** -I: send and write messages up to this size go inline (-1: not given, 0 = none, perftest's default on an unknown device). */
    public int inlineSize = -1;
    /** --use-srq: the send tests' QPs receive from a shared receive queue of -r receives. */
    public boolean useSrq;
    /** -X: the completion vector of the CQs (perftest's eq_num), 0 by default. */
    public int compVector;
    /** --out_json: the report also goes to a file, in perftest's JSON-like form. */
    public boolean outJson;
    /** --out_json_file: that file (default perftest_out.json in the working directory). */
    public String outJsonFile;
    /** --retry_count: the retry count of -R's rdma_cm connections (default 7, perftest's DEF_RETRY_COUNT). */
    public int retryCount = 7;
    /** -z: the exchange runs over an rdma_cm connection; the QPs connect as without it (perftest's -z). */
    public boolean rdmaCmExchange;
    /** -R: the QPs are connected through rdma_cm, and the exchange runs over an rdma_cm connection (perftest's -R). */
    public boolean rdmaCm;

    /** -V/--version: print the version (the one the exchange announces) and run nothing. */
    public boolean version;
    /** -m: the path MTU in bytes (256..4096), or 0 for the port's active MTU; at most the port's (as perftest). */
    public int mtu;
    /** -S: the service level of the address vector (0..15). */
    public int sl;
    /** -L: the hop limit; perftest uses it on raw Ethernet QPs only (its RC and UD address vectors use 255), and so does jrdma. */
    public int hopLimit = 64;
    /**
     * -T: the type of service of -R's rdma_cm connections (0..255, set on the client's ids before their routes), or
     * -1 for none (perftest's DEF_TOS: the kernel's default_roce_tos).
     */
    public int tos = -1;
    /** --tclass: the GRH's traffic class (0..255). */
    public int trafficClass;
    /** --flow_label: the GRH's flow label (20 bits). */
    public int flowLabel;
    /** -o: outstanding reads and atomics, or -1 for the device's maximum (at most 16). */
    public int outReads = -1;
    /** -r: the receives a send test keeps posted per QP, or -1 for perftest's 512. */
    public int rxDepth = -1;
    /** -Q: signal every N-th request of a bandwidth test, or -1 for perftest's 100 (at most -t). */
    public int cqMod = -1;
    /** -N: report no peak bandwidth (0). */
    public boolean noPeak;
    /** --pkey_index: the QPs' P_Key index. */
    public int pkeyIndex;
    /** --dlid: the destination LID to use instead of the peer's (0: the peer's). */
    public int dlid;
    /** --wait_destroy: seconds to wait before the resources are destroyed. */
    public int waitDestroySec;
    /** -A: the atomic operation of atomic_lat and atomic_bw. */
    public AtomicType atomicType = AtomicType.FETCH_AND_ADD;
    /** --output: print only that figure (perftest's verbosity output), or null for the report. */
    public Output output;
    /** --force-link: the link layer the port must have ("InfiniBand" or "Ethernet"), or null. */
    public String forceLink;

    /** -b: both sides send at once (write_bw, read_bw, atomic_bw); each prints the sum of both reports. */
    public boolean bidirectional;
    /** --report-both: with -b, each side's report after their sum. */
    public boolean reportBoth;
    /** --dont_xchg_versions: skip the exchange of versions, page and cache line sizes and MTUs (both sides must). */
    public boolean dontXchgVersions;
    /** -f: seconds at each end of a -D run that are not measured, or -1 for perftest's default (a quarter of -D). */
    public int margin = -1;

    /** {@return the margin of a -D run in seconds: -f, else a quarter of -D (rounded down), as perftest} */
    public int effectiveMargin() {
        return margin >= 0 ? margin : durationSec / 4;
    }

    /** --mr_per_qp: a memory region for each QP. */
    public boolean mrPerQp;
    /** --mmap: the file whose mapping is the buffer, or null for memory of the JVM's own. */
    public String mmapFile;
    /** --mmap-offset: where in the --mmap file the buffer starts. */
    public long mmapOffset;
    /** --reversed: the bandwidth test's traffic goes from the server (no host) to the client. */
    public boolean reversed;
    /** --recv_post_list: a send_bw receiver reposts its receives in lists of this many (1: each at once). */
    public int recvPostList = 1;
    /** -W: the port counters to report after each result (perftest's comma-separated sysfs names), or null. */
    public String reportCounters;
    /** --ipv6: without -x, the device's IPv6 GID instead of its IPv4 one. */
    public boolean ipv6;
    /** -H: print every latency sample, sorted (perftest's histogram), before the report line. */
    public boolean histogram;
    /** -U: print every latency sample in the order measured, before the report line. */
    public boolean unsorted;
    /** --cpu_util: with -D, the machine's CPU utilization during the run, as a column of the report. */
    public boolean cpuUtil;
    /** --latency_gap: microseconds to wait before each post of a latency test. */
    public int latencyGapUs;
    /**
     * --run_infinitely: a bandwidth test runs until it is stopped (the client: SIGINT/SIGTERM, or {@link StopSignal}),
     * reporting every -D seconds (perftest's default 5) what that period moved; no peak is measured.
     */
    public boolean runInfinitely;
    /** perftest's period of a --run_infinitely run without -D (its DEF_DURATION). */
    static final int DEFAULT_INFINITE_PERIOD_SEC = 5;
    /** --rate_limit: the bandwidth sender's rate limit in {@link #rateUnits}, or 0 for none. */
    public double rateLimit;
    /** --rate_units: the unit of --rate_limit (perftest's default Gb/s). */
    public RateUnits rateUnits = RateUnits.GIGABITS;
    /** --rate_limit_type: "SW", "HW" or "PP" as given, or null (perftest: HW, falling back to SW where HW fails). */
    public String rateLimitType;
    /** --burst_size: the requests of one burst of the rate limiter, or 0 for the send queue depth (perftest's). */
    public int burstSize;

    /** {@return whether the software rate limiter paces the sender: --rate_limit given, its type SW or not given} */
    public boolean softwareRateLimit() {
        return rateLimit > 0 && (rateLimitType == null || rateLimitType.equals("SW"));
    }

    /** -l: bandwidth requests posted in lists of this many (1: one at a time); -Q defaults to it. */
    public int postList = 1;
    /** -w: the run fails when its average bandwidth (in the report's unit) is below this; -1 for no limit. */
    public double limitBw = -1;
    /** -y: the run fails when its message rate (Mpps) is below this; -1 for no limit. */
    public double limitMsgRate = -1;

    /** perftest's -A: the atomic operation. */
    public enum AtomicType {
        /** Fetch and add (perftest's default). */
        FETCH_AND_ADD,
        /** Compare and swap. */
        CMP_AND_SWAP
    }

    /** perftest's --output: the one figure printed instead of the report. */
    public enum Output {
        /** The average bandwidth (bandwidth tests). */
        BANDWIDTH,
        /** The message rate in Mpps (bandwidth tests). */
        MESSAGE_RATE,
        /** The average latency in usec (latency tests). */
        LATENCY
    }

    /** perftest's --rate_units: the unit of --rate_limit. */
    public enum RateUnits {
        /** MiB per second ({@code M}). */
        MEGABYTES,
        /** Gb per second ({@code g}, perftest's default). */
        GIGABITS,
        /** Messages (packets) per second ({@code p}). */
        PACKETS
    }

    /** The QP types perftest's -c names that jrdma perf runs. */
    public enum Connection {
        /** Reliable connected QPs (perftest's default). */
        RC,
        /** Unreliable datagram QPs: send_lat and send_bw only, messages up to the MTU. */
        UD
    }

    /** perftest's largest -I (MAX_INLINE) and the largest on a UD QP (MAX_INLINE_UD). */
    public static final int MAX_INLINE = 912, MAX_INLINE_UD = 884;

    /** Options of no test, with perftest's defaults; {@link #parse} is how a command line becomes options. */
    public PerfOptions() {}

    /**
     * {@return whether this side sends in a bandwidth test: the client, or with --reversed the server (perftest swaps its
     * machine roles; the exchange keeps its TCP roles)}
     */
    public boolean bandwidthSender() {
        return bidirectional || isServer() == reversed;
    }

    /** {@return whether this side is the server: no host was given} */
    public boolean isServer() {
        return host == null;
    }

    /**
     * {@return the message size to use, in bytes: 8 for atomics, else -s, else perftest's default (2 for latency,
     * 65536 for bandwidth; 4096 for udp_bw)}
     */
    public int effectiveSize() {
        if (test != null && test.verb == PerfTest.Verb.ATOMIC) return 8;
        if (size > 0) return size;
        if (test == PerfTest.UDP_BW) return DEFAULT_UDP_BW_SIZE;
        return test != null && test.latency ? 2 : 65536;
    }

    /**
     * How long a bandwidth test's sender runs its loop before the timed run, the same for the RDMA, TCP and UDP
     * series (perftest's {@code --perform_warm_up}, by time): a JVM compiles a path only while it runs, and the side
     * that only receives has no other chance to. On this 2-CPU machine a cold 64 B write_bw over the rings needed
     * about a second of traffic before it ran at its steady rate.
     */
    public static final long BW_WARMUP_NS = 2_000_000_000L;
    /** The iterations field of a tcp_bw or udp_bw run header that asks for the warm-up run: timed, not reported. */
    static final long WARM_UP_RUN = -2;

    /** {@return false when {@code -Djrdma.perf.warmup=0} turns the warm-ups off} */
    static boolean warmUps() {
        Long n = Long.getLong("jrdma.perf.warmup");
        return n == null || n > 0;
    }

    /** {@return the iterations to run: -n, else perftest's default (1000 for latency, 5000 for bandwidth)} */
    public long effectiveIters() {
        if (iters > 0) return iters;
        return test != null && test.latency ? 1000 : 5000;
    }

    /** {@return the send queue depth to use: -t, else perftest's default (1 for latency, 128 for bandwidth)} */
    public int effectiveTxDepth() {
        if (txDepth > 0) return txDepth;
        return test != null && test.latency ? 1 : 128;
    }

    /**
     * {@return the message sizes one run covers: -a gives the powers of two 2..2^23 (perftest's RUN_ALL; 2..2^15 for
     * UDP; atomics are 8 bytes only), otherwise the one {@link #effectiveSize()}}
     */
    public List<Integer> runSizes() {
        List<Integer> l = new ArrayList<>();
        if (all && (test == null || test.verb != PerfTest.Verb.ATOMIC)) {
            for (int i = 1; i < 24 && (test == null || !test.isUdp() || 1 << i <= MAX_UDP_SIZE); i++) l.add(1 << i);
        } else {
            l.add(effectiveSize());
        }
        return l;
    }

    /** {@return the text of {@code jrdma perf --help}: the tests, the flags and their defaults, the report's columns} */
    public static String usage() {
        return """
                Usage: jrdma perf TEST [flags] [HOST]
                       jrdma perf compare [flags] [HOST]
                  TEST: send_lat write_lat read_lat atomic_lat send_bw write_bw read_bw atomic_bw (perftest's ib_TEST,
                        wire-compatible with perftest 4.5), tcp_lat tcp_bw (the same over a TCP socket),
                        udp_lat udp_bw (the floor: raw UDP datagrams, busy-polled; udp_bw defaults to 4096 B).
                  Without HOST: server (waits for one client). With HOST: client.
                  -d, --ib-dev DEV        RDMA device (default: the first one; 'jrdma devices' lists them)
                  -i, --ib-port PORT      device port (default 1)
                  -x, --gid-index N       GID index (RoCE; default: the device's RoCE v2 GID)
                  -s, --size BYTES        message size (default 2 for latency, 65536 for bandwidth, 8 for atomics)
                  -a, --all               all sizes 2..2^23
                  -n, --iters N           iterations (default 1000 latency, 5000 bandwidth)
                  -D, --duration SEC      run for SEC seconds instead of -n
                  -p, --port PORT         TCP port of the out-of-band exchange (default 18515)
                  -t, --tx-depth N        send queue depth (default 1 latency, 128 bandwidth)
                  -u, --qp-timeout N      QP ACK timeout, 4.096 us x 2^N (default 14, 67 ms; 1-31)
                  -q, --qp N              number of QPs (bandwidth tests)
                  -c, --connection RC|UD  QP type (default RC; UD: send_lat and send_bw, messages up to the MTU)
                  -e, --events            wait for completions on a completion channel instead of spinning on the CQ
                  -I, --inline_size N     post send/write messages of up to N bytes inline (default 0; at most 912, 884 on UD)
                  -R, --rdma_cm           connect the QPs through rdma_cm, and exchange the parameters over an rdma_cm
                                          connection on port -p, as perftest's -R (native devices only)
                  -m, --mtu BYTES         path MTU 256..4096 (default: the port's active MTU, also the largest)
                  -S, --sl N              service level (default 0)
                  -o, --outs N            outstanding reads/atomics (default: the device's maximum, at most 16)
                  -r, --rx-depth N        receives kept posted by the send tests (default 512)
                  -Q, --cq-mod N          bandwidth: signal one request in N (default 100)
                  -N, --noPeak            bandwidth: no peak (printed as 0)
                  -A, --atomic_type T     FETCH_AND_ADD (default) or CMP_AND_SWAP
                  -L, --hop_limit N       accepted; as perftest, RC and UD send with hop limit 255
                  -F, --CPU-freq          accepted (no CPU-frequency warning to silence)
                  -V, --version           the version the exchange announces
                      --output UNIT       bandwidth | message_rate | latency: that figure alone
                      --tclass N          GRH traffic class      --flow_label N   GRH flow label
                      --pkey_index N      P_Key index            --dlid LID       destination LID instead of the peer's
                      --wait_destroy S    wait S seconds before destroying the resources
                      --force-link IB|Ethernet  refuse to run when the port's link layer differs
                      (every other perftest flag is refused with its reason; jrdma-bench/README.md has the table)
                      --busy-poll         tcp_lat: spin on a non-blocking socket (no blocking read, no wakeups)
                      --poll-budget US    RDMA bandwidth: spin US microseconds after the last completion, then wait
                                          on a completion channel (default: spin, as perftest)
                      --report_gbits      bandwidth in Gb/sec instead of MB/sec
                      --timeout SEC       connect timeout and longest wait without progress (default 10)
                      --accept-timeout S  server: give up when no client connects within S seconds
                      --sizes A,B,...     compare: message sizes (default 2,64,1024,4096,65536)
                      --html FILE         compare: HTML report file (default jrdma-compare.html)
                      --tests A,B,...     compare: only these series (udp_lat tcp_lat tcp_lat_busy_poll send_lat
                                          write_lat udp_bw tcp_bw send_bw write_bw read_bw; default all)
                      --quiet             no progress line
                  -h, --help              this help
                Columns: latency t_min/t_max/t_typical(median)/t_avg/t_stdev/99%/99.9% in usec (half round trip for send
                and write, full round trip for read and atomic, as perftest); bandwidth BW peak/average in MB/sec
                (2^20 bytes/s) or Gb/sec, MsgRate in Mpps.
                """;
    }

    /**
     * Parses perftest-style arguments; the first non-flag word is the test (or {@code compare}), the second the host.
     * Numbers take K/M/G suffixes (powers of 1024); {@code --flag=value} works for the long flags.
     *
     * @param args the command line after {@code jrdma perf}
     * @return the options (only {@link #help} set when -h is given)
     * @throws IllegalArgumentException when a flag is unknown, lacks its value or is out of range, the test is missing
     *                                  or unknown, there is more than one host, or flags contradict each other (e.g.
     *                                  -a with -D, -q on a latency test)
     */
    public static PerfOptions parse(String... args) {
        PerfOptions o = new PerfOptions();
        List<String> positional = new ArrayList<>();
        java.util.ArrayDeque<String> rest = new java.util.ArrayDeque<>(List.of(args));
        while (!rest.isEmpty()) {
            String a = rest.poll();
            PerftestFlags.Option opt;
            String written, value = null;
            if (a.startsWith("--") && a.length() > 2) {
                String name = a.substring(2);
                int eq = name.indexOf('=');
                if (eq >= 0) {
                    value = name.substring(eq + 1);
                    name = name.substring(0, eq);
                }
                opt = PerftestFlags.byName(name);
                written = "--" + name;
                if (opt == null)
                    throw new IllegalArgumentException("unknown flag '" + a + "' (jrdma perf --help lists them)");
                if (!opt.hasArg() && value != null) throw new IllegalArgumentException(written + " takes no value");
            } else if (a.startsWith("-") && a.length() > 1) {
                // getopt: letters may be bundled (-aF), and a letter's value may follow it directly (-s64)
                opt = PerftestFlags.byLetter(a.charAt(1));
                written = a.substring(0, 2);
                if (opt == null)
                    throw new IllegalArgumentException("unknown flag '" + a + "' (jrdma perf --help lists them)");
                if (a.length() > 2) {
                    if (opt.hasArg()) value = a.substring(2);
                    else rest.push("-" + a.substring(2));
                }
            } else {
                positional.add(a);
                continue;
            }
            String refusal = PerftestFlags.refusal(opt);
            if (refusal != null)
                throw new IllegalArgumentException(
                        written + " (perftest's " + opt.display() + ") is not supported by jrdma perf: " + refusal);
            if (opt.hasArg() && value == null) {
                if (rest.isEmpty()) throw new IllegalArgumentException(written + " needs a value");
                value = rest.poll();
            }
            o.apply(opt.name(), written, value);
        }
        if (o.help || o.version) return o;
        if (positional.isEmpty())
            throw new IllegalArgumentException(
                    "which test? e.g. 'jrdma perf send_lat' (server) and 'jrdma perf send_lat HOST' (client)");
        String t = positional.get(0);
        if (t.equalsIgnoreCase("compare")) o.compare = true;
        else o.test = PerfTest.parse(t);
        if (positional.size() > 2)
            throw new IllegalArgumentException(
                    "too many arguments: " + positional.subList(1, positional.size()) + " (one HOST at most)");
        if (positional.size() == 2) o.host = positional.get(1);
        if (o.runInfinitely) {
            o.validateInfinite();
            // perftest: a run_infinitely run is a duration run (its period -D, default 5 s) without a peak
            if (o.durationSec == 0) o.durationSec = DEFAULT_INFINITE_PERIOD_SEC;
            o.noPeak = true;
        }
        o.validate();
        return o;
    }

    /** One option, by its canonical (perftest) long name; {@code flag} is how the command line wrote it. */
    private void apply(String name, String flag, String value) {
        switch (name) {
            case "help" -> help = true;
            case "version" -> version = true;
            case "all" -> all = true;
            case "report_gbits" -> reportGbits = true;
            case "quiet" -> quiet = true;
            case "busy-poll" -> busyPoll = true;
            case "events" -> events = true;
            case "rdma_cm" -> rdmaCm = true;
            case "comm_rdma_cm" -> rdmaCmExchange = true;
            case "out_json" -> outJson = true;
            case "use-srq" -> useSrq = true;
            case "vector" -> compVector = intIn(flag, value, 0, 2048);
            case "out_json_file" -> outJsonFile = value;
            case "retry_count" -> retryCount = intIn(flag, value, 0, 7);
            case "noPeak" -> noPeak = true;
            case "bidirectional" -> bidirectional = true;
            case "run_infinitely" -> runInfinitely = true;
            case "rate_limit" -> {
                rateLimit = positive(flag, value);
                if (rateLimit <= 0) throw new IllegalArgumentException(flag + " must be more than 0 (as perftest)");
            }
            case "rate_units" ->
                rateUnits = switch (value) {
                    case "M" -> RateUnits.MEGABYTES;
                    case "g" -> RateUnits.GIGABITS;
                    case "p" -> RateUnits.PACKETS;
                    default ->
                        throw new IllegalArgumentException(
                                flag + " wants M (MiB/s), g (Gb/s) or p (messages/s), not '" + value + "'");
                };
            case "rate_limit_type" -> {
                if (!value.equals("SW") && !value.equals("HW") && !value.equals("PP"))
                    throw new IllegalArgumentException(flag + " wants HW, SW or PP, not '" + value + "'");
                if (!value.equals("SW"))
                    throw new IllegalArgumentException(flag + " " + value + " is not supported by jrdma perf: "
                            + (value.equals("HW")
                                    ? "the hardware limiter sets a QP's static rate, which no jrdma device paces by"
                                    : "packet pacing is for raw Ethernet QPs on a NIC that paces")
                            + "; use --rate_limit_type=SW (jrdma perf's software limiter, perftest's SW)");
                rateLimitType = value;
            }
            case "burst_size" -> burstSize = intIn(flag, value, 0, 1 << 20);
            case "report-both" -> reportBoth = true;
            case "dont_xchg_versions" -> dontXchgVersions = true;
            case "ipv6" -> ipv6 = true;
            case "report-counters" -> reportCounters = value;
            case "reversed" -> reversed = true;
            case "margin" -> margin = intIn(flag, value, 0, 86400);
            case "mr_per_qp" -> mrPerQp = true;
            case "mmap" -> mmapFile = value;
            case "mmap-offset" -> mmapOffset = sizeIn(flag, value, 0, Long.MAX_VALUE / 2);
            case "recv_post_list" -> recvPostList = intIn(flag, value, 1, 16384);
            case "report-histogrm" -> histogram = true;
            case "report-unsorted" -> unsorted = true;
            case "cpu_util" -> cpuUtil = true;
            case "latency_gap" -> latencyGapUs = intIn(flag, value, 0, 10_000_000);
            case "post_list" -> postList = intIn(flag, value, 1, 16384);
            case "limit_bw" -> limitBw = positive(flag, value);
            case "limit_msgrate" -> limitMsgRate = positive(flag, value);
            case "CPU-freq" -> {
                /* perftest's "ignore CPU frequency warnings": nothing to ignore here */
            }
            case "perform_warm_up" -> {
                /* jrdma perf always warms up (see the README's warm-ups) */
            }
            case "use_old_post_send" -> {
                /* jrdma posts through one path, ibv_post_send's */
            }
            case "hop_limit" -> hopLimit = intIn(flag, value, 0, 255);
            case "connection" -> connection = connection(value);
            case "inline_size" -> inlineSize = intIn(flag, value, 0, MAX_INLINE);
            case "ib-dev" -> device = value;
            case "ib-port" -> ibPort = intIn(flag, value, 1, 255);
            case "gid-index" -> gidIndex = intIn(flag, value, 0, 65535);
            case "size" -> size = (int) sizeIn(flag, value, 1, MAX_SIZE);
            case "iters" -> iters = sizeIn(flag, value, 1, 1L << 40);
            case "duration" -> durationSec = intIn(flag, value, 1, 86400);
            case "port" -> tcpPort = intIn(flag, value, 1, 65535);
            case "tx-depth" -> txDepth = intIn(flag, value, 1, 16384);
            case "qp" -> numQp = intIn(flag, value, 1, 64);
            case "qp-timeout" -> qpTimeout = intIn(flag, value, 1, 31);
            case "mtu" -> {
                mtu = intIn(flag, value, 256, 4096);
                if (Integer.bitCount(mtu) != 1)
                    throw new IllegalArgumentException(
                            flag + " " + value + ": choose the MTU from 256, 512, 1024, 2048, 4096");
            }
            case "sl" -> sl = intIn(flag, value, 0, 15);
            case "tclass" -> trafficClass = intIn(flag, value, 0, 255);
            case "tos" -> tos = intIn(flag, value, 0, 255);
            case "flow_label" -> flowLabel = intIn(flag, value, 0, 0xfffff);
            case "outs" -> outReads = intIn(flag, value, 1, 65535);
            case "rx-depth" -> rxDepth = intIn(flag, value, 1, 16384);
            case "cq-mod" -> cqMod = intIn(flag, value, 1, 1024);
            case "pkey_index" -> pkeyIndex = intIn(flag, value, 0, 65535);
            case "dlid" -> dlid = intIn(flag, value, 1, 0xffff);
            case "wait_destroy" -> waitDestroySec = intIn(flag, value, 0, 3600);
            case "atomic_type" ->
                atomicType = switch (value) {
                    case "FETCH_AND_ADD" -> AtomicType.FETCH_AND_ADD;
                    case "CMP_AND_SWAP" -> AtomicType.CMP_AND_SWAP;
                    default ->
                        throw new IllegalArgumentException(
                                flag + " wants CMP_AND_SWAP or FETCH_AND_ADD, not '" + value + "'");
                };
            case "output" ->
                output = switch (value) {
                    case "bandwidth" -> Output.BANDWIDTH;
                    case "message_rate" -> Output.MESSAGE_RATE;
                    case "latency" -> Output.LATENCY;
                    default ->
                        throw new IllegalArgumentException(
                                flag + " wants bandwidth, message_rate or latency, not '" + value + "'");
                };
            case "force-link" ->
                forceLink = switch (value.toUpperCase(Locale.ROOT)) {
                    case "IB" -> "InfiniBand";
                    case "ETHERNET" -> "Ethernet";
                    default -> throw new IllegalArgumentException(flag + " wants IB or Ethernet, not '" + value + "'");
                };
            case "accept-timeout" -> acceptTimeoutSec = intIn(flag, value, 1, 86400);
            case "poll-budget" -> pollBudgetMicros = intIn(flag, value, 1, 1_000_000);
            case "timeout" -> timeoutSec = intIn(flag, value, 1, 3600);
            case "html" -> html = value;
            case "tests" -> {
                List<String> t = new ArrayList<>();
                for (String part : value.split(",")) {
                    if (part.isBlank()) continue;
                    t.add(Compare.Series.parse(part.trim().toLowerCase(Locale.ROOT))
                            .id());
                }
                if (t.isEmpty())
                    throw new IllegalArgumentException(
                            "--tests needs at least one series, e.g. --tests write_bw,read_bw");
                compareTests = t;
            }
            case "sizes" -> {
                List<Integer> s = new ArrayList<>();
                for (String part : value.split(","))
                    if (!part.isBlank()) s.add((int) sizeIn(flag, part.trim(), 1, MAX_SIZE));
                if (s.isEmpty())
                    throw new IllegalArgumentException("--sizes needs at least one size, e.g. --sizes 2,64,4096");
                sizes = s;
            }
            default -> throw new IllegalStateException("no handling for --" + name);
        }
    }

    private static Connection connection(String v) {
        return switch (v.toUpperCase(Locale.ROOT)) {
            case "RC" -> Connection.RC;
            case "UD" -> Connection.UD;
            case "UC", "XRC", "DC", "SRD", "RAWETH" ->
                throw new IllegalArgumentException("-c " + v + ": jrdma perf runs RC and UD QPs only");
            default -> throw new IllegalArgumentException("-c wants RC or UD, not '" + v + "'");
        };
    }

    /**
     * {@return the inline size the run uses, in bytes: -I (capped at perftest's UD maximum on UD), or 0; always 0 for
     * reads and atomics}
     */
    public int effectiveInline() {
        if (inlineSize <= 0 || test == null || (test.verb != PerfTest.Verb.SEND && test.verb != PerfTest.Verb.WRITE))
            return 0;
        return connection == Connection.UD ? Math.min(inlineSize, MAX_INLINE_UD) : inlineSize;
    }

    /** --run_infinitely's dependencies, perftest's where it has them. */
    private void validateInfinite() {
        if (test == null || test.latency || test.isSocket())
            throw new IllegalArgumentException(
                    "--run_infinitely exists only in the RDMA bandwidth tests (as perftest)");
        if (events) throw new IllegalArgumentException("--run_infinitely does not support -e (events), as perftest");
        if (all) throw new IllegalArgumentException("--run_infinitely runs one size: -a does not apply");
        if (bidirectional)
            throw new IllegalArgumentException("--run_infinitely with -b: jrdma perf stops an endless run from its"
                    + " sending side only, and with -b both sides send (as perftest refuses send_bw -b); use -b -D");
    }

    void validate() {
        SoftwareRateLimiter.validate(this);
        if (test != null
                && test.isSocket()
                && (histogram
                        || unsorted
                        || cpuUtil
                        || latencyGapUs > 0
                        || postList > 1
                        || limitBw >= 0
                        || limitMsgRate >= 0))
            throw new IllegalArgumentException(
                    "-H, -U, --cpu_util, --latency_gap, -l, -w and -y are for the RDMA tests, not " + test.id());
        if (test != null && !test.latency && (histogram || unsorted || latencyGapUs > 0))
            throw new IllegalArgumentException((latencyGapUs > 0 ? "--latency_gap" : histogram ? "-H" : "-U")
                    + " is for latency tests (as perftest)");
        if (test != null && test.latency && (postList > 1 || limitBw >= 0 || limitMsgRate >= 0))
            throw new IllegalArgumentException(
                    (postList > 1 ? "-l" : limitBw >= 0 ? "-w" : "-y") + " is for bandwidth tests (as perftest)");
        if (bidirectional && test != null && test.latency)
            throw new IllegalArgumentException("-b: bidirectional is only available in bandwidth tests (as perftest)");
        if (bidirectional && test != null && test.isSocket())
            throw new IllegalArgumentException(
                    "-b (perftest's --bidirectional) is for the RDMA bandwidth tests, not " + test.id());
        if (reversed && test != null && (test.latency || test.isSocket()))
            throw new IllegalArgumentException(
                    "--reversed reverses a bandwidth test's traffic (as perftest): not " + test.id());
        if (reversed && bidirectional)
            throw new IllegalArgumentException("--reversed and -b: -b already sends both ways");
        if (durationSec > 0 && durationSec <= 2 * effectiveMargin())
            throw new IllegalArgumentException("-D " + durationSec + " must be longer than twice the margin -f "
                    + effectiveMargin() + " (as perftest: DURATION > 2*MARGIN)");
        if (useSrq && test != null && test.verb != PerfTest.Verb.SEND)
            throw new IllegalArgumentException("--use-srq is for the send tests (their receives)");
        if (mmapOffset > 0 && mmapFile == null) throw new IllegalArgumentException("--mmap-offset needs --mmap FILE");
        if (recvPostList > 1 && test != null && test.latency)
            throw new IllegalArgumentException("--recv_post_list is for bandwidth tests (as perftest)");
        if (recvPostList > 1 && durationSec == 0 && effectiveIters() % recvPostList != 0)
            throw new IllegalArgumentException("-n " + effectiveIters() + " must be a multiple of --recv_post_list "
                    + recvPostList + " (as perftest)");
        if (recvPostList > (rxDepth > 0 ? rxDepth : 512))
            throw new IllegalArgumentException("--recv_post_list " + recvPostList
                    + " is more than the receives posted (-r " + (rxDepth > 0 ? rxDepth : 512) + ")");
        if (cpuUtil && durationSec == 0)
            throw new IllegalArgumentException("--cpu_util is valid only with -D (as perftest)");
        if ((histogram || unsorted) && durationSec > 0)
            throw new IllegalArgumentException("-H and -U report the samples of an -n run, not -D");
        if (postList > 1 && durationSec == 0 && effectiveIters() % postList != 0)
            throw new IllegalArgumentException("-n " + effectiveIters()
                    + " must be a multiple of the post list size -l " + postList + " (as perftest)");
        if (postList > 1 && cqMod > 0 && postList % cqMod != 0)
            throw new IllegalArgumentException(
                    "-l " + postList + " must be a multiple of -Q " + cqMod + " (as perftest)");
        if (postList > effectiveTxDepth())
            throw new IllegalArgumentException(
                    "-l " + postList + " is larger than the send queue (-t " + effectiveTxDepth() + ")");
        if (test != null
                && test.isSocket()
                && (mtu > 0
                        || sl > 0
                        || trafficClass > 0
                        || flowLabel > 0
                        || outReads > 0
                        || rxDepth > 0
                        || cqMod > 0
                        || noPeak
                        || pkeyIndex > 0
                        || dlid > 0
                        || atomicType != AtomicType.FETCH_AND_ADD
                        || forceLink != null
                        || output != null))
            throw new IllegalArgumentException(
                    "-m, -S, --tclass, --flow_label, -o, -r, -Q, -N, --pkey_index, --dlid, -A, --force-link and --output are for the RDMA tests, not "
                            + test.id());
        if (test != null && outReads > 0 && test.verb != PerfTest.Verb.READ && test.verb != PerfTest.Verb.ATOMIC)
            throw new IllegalArgumentException(
                    "-o (outstanding reads) applies to the read and atomic tests only (as perftest)");
        if (test != null && rxDepth > 1 && test.verb != PerfTest.Verb.SEND)
            throw new IllegalArgumentException(
                    "-r: on RDMA verbs the receive depth can only be 1 (as perftest); it is for the send tests");
        if (test != null && atomicType != AtomicType.FETCH_AND_ADD && test.verb != PerfTest.Verb.ATOMIC)
            throw new IllegalArgumentException(
                    "-A changes the atomic operation: it applies to atomic_lat and atomic_bw only (as perftest)");
        if (test != null && (noPeak || cqMod > 0) && test.latency)
            throw new IllegalArgumentException((noPeak ? "-N" : "-Q") + " is for bandwidth tests (as perftest)");
        if (test != null && output != null && (output == Output.LATENCY) != test.latency)
            throw new IllegalArgumentException(
                    "--output " + output.name().toLowerCase(Locale.ROOT) + " does not fit " + test.id()
                            + (test.latency
                                    ? ": a latency test reports latency"
                                    : ": a bandwidth test reports bandwidth or message_rate"));
        if (test != null
                && test.isSocket()
                && (events || rdmaCm || rdmaCmExchange || inlineSize >= 0 || connection != Connection.RC))
            throw new IllegalArgumentException("-c, -e, -I and -R are for the RDMA tests, not " + test.id());
        if (compare && (events || rdmaCm || rdmaCmExchange || inlineSize >= 0 || connection != Connection.RC))
            throw new IllegalArgumentException(
                    "compare runs its series with perftest's defaults: -c, -e, -I and -R do not apply");
        if (tos >= 0 && !rdmaCm)
            throw new IllegalArgumentException(
                    "-T sets the type of service of -R's rdma_cm connections: add -R"
                            + " (perftest refuses -T without it too); --tclass sets the traffic class of QPs connected without rdma_cm");
        if (connection == Connection.UD && test != null && test.verb != PerfTest.Verb.SEND)
            throw new IllegalArgumentException(
                    "UD QPs send messages only: -c UD works with send_lat and send_bw (as perftest)");
        if (events && durationSec > 0)
            throw new IllegalArgumentException("-e and -D cannot be combined (perftest refuses it too)");
        if (test != null && inlineSize > 0 && test.verb != PerfTest.Verb.SEND && test.verb != PerfTest.Verb.WRITE)
            throw new IllegalArgumentException(
                    "-I applies to the send and write tests: " + test.id() + " posts nothing inline");
        if (all && durationSec > 0)
            throw new IllegalArgumentException("-a and -D cannot be combined (perftest refuses it too)");
        if (test != null && test.latency && numQp > 1)
            throw new IllegalArgumentException("latency tests use one QP; -q is for bandwidth tests");
        if (test != null && test.latency && durationSec == 0 && effectiveIters() < 5)
            throw new IllegalArgumentException(
                    "-n must be at least 5 for a latency test (the report drops the 2 largest samples)");
        if (test != null && test.verb == PerfTest.Verb.ATOMIC && size > 0 && size != 8)
            throw new IllegalArgumentException("atomic operations are 8 bytes; -s " + size + " does not apply");
        if (pollBudgetMicros > 0 && test != null && (test.latency || test.isSocket()))
            throw new IllegalArgumentException(
                    "--poll-budget is for the RDMA bandwidth tests: " + test.id() + " always spins");
        if (pollBudgetMicros > 0 && durationSec > 0)
            throw new IllegalArgumentException(
                    "--poll-budget waits on a completion channel: it cannot be combined with -D (as -e)");
        if (busyPoll && test != PerfTest.TCP_LAT)
            throw new IllegalArgumentException(
                    "--busy-poll is a tcp_lat variant (udp_lat and udp_bw always busy-poll; compare runs tcp_lat both ways)");
        if (test != null && test.isUdp() && size > MAX_UDP_SIZE)
            throw new IllegalArgumentException(
                    "-s " + size + " does not fit in one UDP datagram (at most " + MAX_UDP_SIZE + " bytes)");
        if (test != null && test.isUdp() && numQp > 1)
            throw new IllegalArgumentException("-q is for the RDMA bandwidth tests; the UDP tests use one socket");
    }

    private static double positive(String flag, String v) {
        try {
            double d = Double.parseDouble(v);
            if (d >= 0 && Double.isFinite(d)) return d;
        } catch (NumberFormatException e) {
            // the message below
        }
        throw new IllegalArgumentException(flag + " wants a number of 0 or more, not '" + v + "'");
    }

    private static String need(String[] args, int i, String flag) {
        if (i >= args.length) throw new IllegalArgumentException(flag + " needs a value");
        return args[i];
    }

    private static int intIn(String flag, String v, int lo, int hi) {
        return (int) sizeIn(flag, v, lo, hi);
    }

    /** A number, optionally with K/M/G (powers of 1024). */
    static long sizeIn(String flag, String v, long lo, long hi) {
        String t = v.trim().toUpperCase(Locale.ROOT);
        long mult = 1;
        if (t.endsWith("K")) {
            mult = 1L << 10;
            t = t.substring(0, t.length() - 1);
        } else if (t.endsWith("M")) {
            mult = 1L << 20;
            t = t.substring(0, t.length() - 1);
        } else if (t.endsWith("G")) {
            mult = 1L << 30;
            t = t.substring(0, t.length() - 1);
        }
        long n;
        try {
            n = Math.multiplyExact(Long.parseLong(t), mult);
        } catch (NumberFormatException | ArithmeticException e) {
            throw new IllegalArgumentException(flag + " wants a number, not '" + v + "'");
        }
        if (n < lo || n > hi) throw new IllegalArgumentException(flag + " " + v + " is outside " + lo + ".." + hi);
        return n;
    }
}
