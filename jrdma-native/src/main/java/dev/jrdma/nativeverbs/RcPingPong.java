package dev.jrdma.nativeverbs;

import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.AhAttr;
import dev.jrdma.verbs.CompletionQueue;
import dev.jrdma.verbs.Context;
import dev.jrdma.verbs.Device;
import dev.jrdma.verbs.Gid;
import dev.jrdma.verbs.Grh;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.Mtu;
import dev.jrdma.verbs.ProtectionDomain;
import dev.jrdma.verbs.QpAttr;
import dev.jrdma.verbs.QpInitAttr;
import dev.jrdma.verbs.QpState;
import dev.jrdma.verbs.QpType;
import dev.jrdma.verbs.QueuePair;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.Verbs;
import dev.jrdma.verbs.VerbsException;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.concurrent.ThreadLocalRandom;

/**
 * A Java twin of rdma-core's {@code ibv_rc_pingpong} and, with {@code -ud} ({@link Options#ud}), of
 * {@code ibv_ud_pingpong}: UD QPs with Q_Key 0x11111111, an address handle to the peer, receive buffers 40 bytes
 * longer than the message for the GRH. Both speak the same TCP exchange ({@code "%04x:%06x:%06x:%s"}:
 * LID, QPN, PSN and the GID as 32 hex digits, in a 52-byte message with its NUL, then "done") and its
 * ping-pong of SENDs, so it can play client or server against the C program.
 * <pre>
 *   java ... dev.jrdma.nativeverbs.RcPingPong -d rxe0 -g 1 -n 1000            # server
 *   java ... dev.jrdma.nativeverbs.RcPingPong -d rxe0 -g 1 -n 1000 10.0.0.1   # client
 * </pre>
 */
public final class RcPingPong {
    static final int MSG_SIZE = "0000:000000:000000:00000000000000000000000000000000".length() + 1;
    private static final long RECV_WRID = 1, SEND_WRID = 2;
    /** The Q_Key ibv_ud_pingpong uses. */
    static final int UD_QKEY = 0x11111111;

    private RcPingPong() {
        // static only: main and run
    }

    /**
     * One side's connection data, as rc_pingpong exchanges it.
     *
     * @param lid the port's LID (0 on RoCE)
     * @param qpn the QP number
     * @param psn the first packet sequence number this side sends
     * @param gid the GID (all zero when no -g was given)
     */
    public record Dest(int lid, int qpn, int psn, Gid gid) {
        byte[] wire() {
            String s = String.format(
                    "%04x:%06x:%06x:%s", lid, qpn, psn, HexFormat.of().formatHex(gid.toByteArray()));
            byte[] b = new byte[MSG_SIZE];
            byte[] t = s.getBytes(StandardCharsets.US_ASCII);
            System.arraycopy(t, 0, b, 0, Math.min(t.length, MSG_SIZE - 1));
            return b;
        }

        static Dest parse(byte[] msg) {
            int n = 0;
            while (n < msg.length && msg[n] != 0) n++;
            String[] p = new String(msg, 0, n, StandardCharsets.US_ASCII).split(":");
            if (p.length != 4 || p[3].length() != 32)
                throw new IllegalArgumentException("not an rc_pingpong address message: '"
                        + new String(msg, 0, n, StandardCharsets.US_ASCII) + "'");
            return new Dest(
                    Integer.parseInt(p[0], 16),
                    Integer.parseInt(p[1], 16),
                    Integer.parseInt(p[2], 16),
                    Gid.of(HexFormat.of().parseHex(p[3])));
        }
    }

    /** Options, named like rc_pingpong's. */
    public static final class Options {
        /** Options with rc_pingpong's defaults. */
        public Options() {}

        /** -d: the device's name, or null for the default device. */
        public String device;
        /** The server's host (the positional argument); null: this side is the server. */
        public String server;
        /**
         * -p TCP port (18515), -i device port (1), -s message size in bytes (4096), -r receive queue depth (500),
         * -n iterations (1000), -l service level (0), -g GID index (-1: none, the peer is reached by LID).
         */
        public int tcpPort = 18515, ibPort = 1, size = 4096, rxDepth = 500, iters = 1000, sl = 0, gidIndex = -1;
        /** -m: the path MTU (1024, rc_pingpong's default). */
        public Mtu mtu = Mtu.MTU_1024;
        /** Play ibv_ud_pingpong (UD datagrams) instead of ibv_rc_pingpong. */
        public boolean ud;
        /** How long a client retries a refused TCP connection before it gives up, in milliseconds. */
        public long connectTimeoutMs = 30_000;
        /** Called once the server's TCP socket listens (a test starts the C client then). */
        public Runnable onListening = () -> {};
    }

    /**
     * What a run measured, as rc_pingpong prints it.
     *
     * @param bytes   the bytes sent and received
     * @param seconds the ping-pong's wall-clock time
     * @param iters   the iterations
     */
    public record Result(long bytes, double seconds, int iters) {
        /** {@return the throughput in Mbit/sec (10^6 bits per second)} */
        public double mbitPerSec() {
            return bytes * 8 / seconds / 1e6;
        }
        /** {@return the microseconds per iteration} */
        public double usecPerIter() {
            return seconds * 1e6 / iters;
        }

        @Override
        public String toString() {
            return String.format(
                    "%d bytes in %.2f seconds = %.2f Mbit/sec%n%d iters in %.2f seconds = %.2f usec/iter",
                    bytes, seconds, mbitPerSec(), iters, seconds, usecPerIter());
        }
    }

    /**
     * Runs as rc_pingpong (or ud_pingpong with {@code -ud}) would and prints its two result lines; a flag it does not
     * know prints the usage and exits with status 2.
     *
     * @param args rc_pingpong's flags ({@code -p -d -i -s -m -r -n -l -g}, and {@code -ud}) and the server's host
     *             for a client
     * @throws Exception when the device, the exchange or the ping-pong fails
     */
    public static void main(String[] args) throws Exception {
        Options o = new Options();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            switch (a) {
                case "-p" -> o.tcpPort = Integer.parseInt(args[++i]);
                case "-d" -> o.device = args[++i];
                case "-i" -> o.ibPort = Integer.parseInt(args[++i]);
                case "-s" -> o.size = Integer.parseInt(args[++i]);
                case "-m" -> o.mtu = Mtu.ofBytes(Integer.parseInt(args[++i]));
                case "-r" -> o.rxDepth = Integer.parseInt(args[++i]);
                case "-n" -> o.iters = Integer.parseInt(args[++i]);
                case "-l" -> o.sl = Integer.parseInt(args[++i]);
                case "-g" -> o.gidIndex = Integer.parseInt(args[++i]);
                case "-ud" -> o.ud = true;
                default -> {
                    if (a.startsWith("-")) {
                        System.err.println(
                                "usage: RcPingPong [-p port] [-d dev] [-i ib-port] [-s size] [-m mtu] [-r rx-depth] [-n iters] [-l sl] [-g gid-idx] [-ud] [server]");
                        System.exit(2);
                    }
                    o.server = a;
                }
            }
        }
        Device dev = o.device == null ? Verbs.defaultDevice() : Verbs.device(o.device);
        System.out.println(run(dev, o));
    }

    /**
     * Runs one side of the ping-pong on {@code dev}: the TCP exchange of {@link Dest}s, the QP to RTS, then
     * {@code iters} SENDs each way.
     *
     * @param dev the device
     * @param o   the options; {@code o.server} null makes this side the server
     * @return what was measured
     * @throws IOException           when the TCP exchange fails
     * @throws VerbsException        when the device refuses a resource, or the server cannot be reached within
     *                               {@code connectTimeoutMs} (ECONNREFUSED)
     * @throws IllegalStateException when a work completion fails or the ping-pong stalls
     * @throws IllegalArgumentException when a UD message is larger than the port's MTU
     */
    public static Result run(Device dev, Options o) throws IOException {
        try (Context ctx = dev.open();
                Arena arena = Arena.ofShared()) {
            ProtectionDomain pd = ctx.allocPd();
            // ud_pingpong receives into the whole buffer (the GRH first) and sends from behind the GRH area
            int grh = o.ud ? Grh.BYTES : 0;
            if (o.ud && o.size > ctx.queryPort(o.ibPort).activeMtu().bytes)
                throw new IllegalArgumentException("requested size " + o.size + " is larger than the port's MTU "
                        + ctx.queryPort(o.ibPort).activeMtu().bytes);
            MemorySegment buf = arena.allocate(o.size + grh, 4096);
            MemoryRegion mr = pd.registerMemory(buf, Access.LOCAL_WRITE);
            CompletionQueue cq = ctx.createCq(o.rxDepth + 1, null);
            QueuePair qp = pd.createQueuePair(QpInitAttr.builder(cq)
                    .type(o.ud ? QpType.UD : QpType.RC)
                    .maxSendWr(1)
                    .maxRecvWr(o.rxDepth)
                    .build());
            if (o.ud)
                qp.modify(new QpAttr()
                        .state(QpState.INIT)
                        .pkeyIndex(0)
                        .port(o.ibPort)
                        .qkey(UD_QKEY));
            else
                qp.modify(new QpAttr()
                        .state(QpState.INIT)
                        .pkeyIndex(0)
                        .port(o.ibPort)
                        .access(java.util.EnumSet.noneOf(Access.class)));

            RecvWorkRequest rwr = new RecvWorkRequest().wrId(RECV_WRID).buffer(mr, 0, o.size + grh);
            int routs = postRecvs(qp, rwr, o.rxDepth);
            if (routs < o.rxDepth) throw new IllegalStateException("couldn't post receive (" + routs + ")");

            int lid = ctx.queryPort(o.ibPort).lid();
            Gid gid = o.gidIndex >= 0 ? ctx.queryGid(o.ibPort, o.gidIndex) : Gid.ZERO;
            Dest my = new Dest(lid, qp.qpNum(), ThreadLocalRandom.current().nextInt(0x1000000), gid);
            Dest rem = o.server == null ? serverExchange(qp, o, my) : clientExchange(o, my);
            if (o.server != null) connect(qp, o, my, rem);

            SendWorkRequest swr = new SendWorkRequest()
                    .wrId(SEND_WRID)
                    .opcode(WrOpcode.SEND)
                    .signaled(true)
                    .buffer(mr, grh, o.size);
            if (o.ud) swr.ud(pd.createAddressHandle(ahTo(rem, o)), rem.qpn(), UD_QKEY);
            WorkCompletion[] wcs = WorkCompletion.array(2);
            long start = System.nanoTime();
            int pending = (int) RECV_WRID, scnt = 0, rcnt = 0;
            if (o.server != null) {
                qp.postSend(swr);
                pending |= (int) SEND_WRID;
            }
            long deadline = System.currentTimeMillis() + Math.max(60_000, o.iters * 100L);
            while (rcnt < o.iters || scnt < o.iters) {
                int ne = cq.poll(wcs);
                if (ne == 0) {
                    if (System.currentTimeMillis() > deadline)
                        throw new IllegalStateException("ping-pong stalled: sent " + scnt + ", received " + rcnt);
                    Thread.onSpinWait();
                    continue;
                }
                for (int i = 0; i < ne; i++) {
                    WorkCompletion wc = wcs[i];
                    if (!wc.isSuccess())
                        throw new IllegalStateException(
                                "failed status " + wc.status + " for wr_id " + wc.wrId + ": " + wc.explain());
                    if (wc.wrId == SEND_WRID) {
                        scnt++;
                    } else if (wc.wrId == RECV_WRID) {
                        if (--routs <= 1) {
                            routs += postRecvs(qp, rwr, o.rxDepth - routs);
                            if (routs < o.rxDepth)
                                throw new IllegalStateException("couldn't post receive (" + routs + ")");
                        }
                        rcnt++;
                    } else {
                        throw new IllegalStateException("completion for unknown wr_id " + wc.wrId);
                    }
                    pending &= ~(int) wc.wrId;
                    if (scnt < o.iters && pending == 0) {
                        qp.postSend(swr);
                        pending = (int) (RECV_WRID | SEND_WRID);
                    }
                }
            }
            double secs = (System.nanoTime() - start) / 1e9;
            return new Result((long) o.size * o.iters * 2, secs, o.iters);
        }
    }

    private static int postRecvs(QueuePair qp, RecvWorkRequest wr, int n) {
        for (int i = 0; i < n; i++) qp.postRecv(wr);
        return n;
    }

    /** The peer's address as the C programs build it: global (hop limit 1) when its GID has an interface id. */
    private static AhAttr ahTo(Dest rem, Options o) {
        AhAttr ah = new AhAttr().dlid(rem.lid()).portNum(o.ibPort);
        ah.sl = o.sl;
        byte[] g = rem.gid().toByteArray();
        boolean interfaceId = false;
        for (int i = 8; i < 16; i++) interfaceId |= g[i] != 0;
        if (interfaceId) ah.global(rem.gid(), Math.max(0, o.gidIndex)).hopLimit(1);
        return ah;
    }

    private static void connect(QueuePair qp, Options o, Dest my, Dest rem) {
        if (o.ud) { // a UD QP needs no peer to reach RTS: the address travels with each send
            qp.modify(new QpAttr().state(QpState.RTR));
            qp.modify(new QpAttr().state(QpState.RTS).sqPsn(my.psn()));
            return;
        }
        AhAttr ah = ahTo(rem, o);
        qp.modify(new QpAttr()
                .state(QpState.RTR)
                .pathMtu(o.mtu)
                .destQpNum(rem.qpn())
                .rqPsn(rem.psn())
                .maxDestRdAtomic(1)
                .minRnrTimer(12)
                .ah(ah));
        qp.modify(new QpAttr()
                .state(QpState.RTS)
                .timeout(14)
                .retryCnt(7)
                .rnrRetry(7)
                .sqPsn(my.psn())
                .maxRdAtomic(1));
    }

    private static Dest clientExchange(Options o, Dest my) throws IOException {
        long deadline = System.currentTimeMillis() + o.connectTimeoutMs;
        while (true) {
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress(o.server, o.tcpPort), 5000);
                OutputStream out = s.getOutputStream();
                InputStream in = s.getInputStream();
                out.write(my.wire());
                out.flush();
                byte[] msg = in.readNBytes(MSG_SIZE);
                if (msg.length != MSG_SIZE)
                    throw new IOException("couldn't read remote address (" + msg.length + " bytes)");
                out.write("done\0".getBytes(StandardCharsets.US_ASCII));
                out.flush();
                return Dest.parse(msg);
            } catch (java.net.ConnectException e) {
                if (System.currentTimeMillis() > deadline)
                    throw new VerbsException(
                            "rc_pingpong exchange",
                            VerbsException.ECONNREFUSED,
                            "couldn't connect to " + o.server + ":" + o.tcpPort + ": is the server running?");
                try {
                    Thread.sleep(100);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw new IOException(ie);
                }
            }
        }
    }

    private static Dest serverExchange(QueuePair qp, Options o, Dest my) throws IOException {
        try (ServerSocket ss = new ServerSocket()) {
            ss.setReuseAddress(true);
            ss.bind(new InetSocketAddress(o.tcpPort));
            ss.setSoTimeout((int) Math.min(Integer.MAX_VALUE, o.connectTimeoutMs));
            o.onListening.run();
            try (Socket s = ss.accept()) {
                InputStream in = s.getInputStream();
                OutputStream out = s.getOutputStream();
                byte[] msg = in.readNBytes(MSG_SIZE);
                if (msg.length != MSG_SIZE)
                    throw new IOException(msg.length + "/" + MSG_SIZE + ": couldn't read remote address");
                Dest rem = Dest.parse(msg);
                connect(qp, o, my, rem);
                out.write(my.wire());
                out.flush();
                byte[] done = in.readNBytes(5);
                if (done.length != 5) throw new IOException("couldn't read \"done\" from the client");
                return rem;
            }
        }
    }
}
