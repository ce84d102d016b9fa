package dev.jrdma.soft;

import java.util.ArrayDeque;
import java.util.PriorityQueue;
import java.util.SplittableRandom;

/**
 * A deterministic model of issue 23's shared bottleneck (jrdma-bench/scripts/share-bottleneck.sh), on time the model
 * owns: one soft flow under {@link Dcqcn} (or none) and one TCP flow with ECN (additive increase, a cut once per round
 * trip on ECE) share one FIFO queue that drains at the bottleneck's rate and marks packets as Linux RED with {@code ecn}
 * does (an average queue with weight 1/2^wlog, marking with a probability rising from {@code minBytes} to {@code
 * maxBytes}, every packet above it, tail drop at {@code limitBytes}). The queue sits at the senders (tbf on the sending
 * namespace's veth end); packets, ACKs and CNPs take half the base round trip each way. The soft flow sends at its line
 * rate within its window (the Requester's 256 KiB), as the pacer allows once limited; its receiver is DCQCN's
 * notification point ({@link Dcqcn#shouldSendCnp}: a CNP once the marked packets make {@code cnpBytes}, the QP's MTU). What the real QPs do beyond that (ACK coalescing, resends) is left
 * out: the model is for DCQCN's curve against TCP's, not for the transport. {@link Config#withSenderStalls} takes the
 * soft sender's threads off the CPU for part of every period (QEMU's TCG): feedback then comes in bursts.
 */
final class SharedBottleneckModel {
    /** One scenario: the network, the two senders and DCQCN's settings ({@code dcqcn.enabled() == false}: off). */
    record Config(
            double bottleneckBps,
            double softLineBps,
            double tcpLineBps,
            long rttNanos,
            int softPacket,
            int softWindow,
            int cnpBytes,
            int tcpPacket,
            double tcpBeta,
            int minBytes,
            int maxBytes,
            int limitBytes,
            double maxP,
            int wlog,
            Dcqcn.Params dcqcn,
            long settleNanos,
            long endNanos,
            long softStartNanos,
            long stallPeriodNanos,
            long stallNanos) {
        /**
         * The guest's run: a 20 Mb/s bottleneck, RED as the script sets it at that rate (marks from 27 kB of average
         * queue, all from 81 kB, tail drop at 648 kB, weight 1/8), MTU 9000 for TCP, full 4 KiB packets for the soft
         * flow (a 4 KiB path MTU: a window of 64), a 1 ms base round trip; 4 s to settle, then 8 s measured.
         */
        static Config guest(Dcqcn.Params dcqcn, double softLineBps) {
            return new Config(
                    20e6,
                    softLineBps,
                    1e9,
                    1_000_000L,
                    4096 + 66,
                    64,
                    4096,
                    9014,
                    0.5,
                    27_000,
                    81_000,
                    648_000,
                    0.1,
                    3,
                    dcqcn,
                    4_000_000_000L,
                    12_000_000_000L,
                    0,
                    0,
                    0);
        }

        /**
         * A bottleneck of {@code bps} with RED as share-bottleneck.sh sets it at that rate (marks from 2 ms of average
         * queue, at least three 9000-byte packets; all from three times that; tail drop at 24 times), base round trip
         * {@code rtt}.
         */
        Config withBottleneck(double bps, long rtt) {
            int min = (int) Math.max(3 * 9000, bps / 8 / 1000 * 2);
            Copy c = new Copy(this);
            c.bottleneckBps = bps;
            c.rttNanos = rtt;
            c.minBytes = min;
            c.maxBytes = 3 * min;
            c.limitBytes = 24 * min;
            return c.build();
        }

        /** TCP's sender limited to {@code bps} (under emulation its JVMs share the CPU with the soft flow's). */
        Config withTcpLine(double bps) {
            Copy c = new Copy(this);
            c.tcpLineBps = bps;
            return c.build();
        }

        /** The soft flow's line {@code times} the bottleneck. */
        Config withSoftLine(double times) {
            Copy c = new Copy(this);
            c.softLineBps = times * bottleneckBps;
            return c.build();
        }

        /**
         * The soft flow's first packet at {@code nanos}, its line measured from 0 all the same (as a QP's from RTS,
         * before the application posts): the first limit's line is misjudged low.
         */
        Config withSoftStart(long nanos) {
            Copy c = new Copy(this);
            c.softStartNanos = nanos;
            return c.build();
        }

        /**
         * A QP of small messages: packets of {@code bytes} on the wire, on a path MTU of {@code mtu}: the Requester's
         * window (256 KiB of full packets, at least 16) and the notification point's unit (the MTU) follow it.
         */
        Config withSoftPackets(int bytes, int mtu) {
            Copy c = new Copy(this);
            c.softPacket = bytes;
            c.softWindow = Math.max(16, (256 << 10) / mtu);
            c.cnpBytes = mtu;
            return c.build();
        }

        /** The notification point as the paper's: a CNP for every marked packet (once an interval), whatever its size. */
        Config withCnpPerMarkedPacket() {
            Copy c = new Copy(this);
            c.cnpBytes = 1;
            return c.build();
        }

        /**
         * The soft sender's threads are off the CPU for the last {@code stallNanos} of every {@code periodNanos} (under
         * QEMU's TCG the guest's threads wait for the host thread that runs both vCPUs): nothing is sent then, and the
         * ACKs and CNPs that arrive meanwhile are taken in one burst when the threads run again.
         */
        Config withSenderStalls(long periodNanos, long stallNanos) {
            if (stallNanos < 0 || stallNanos >= periodNanos) throw new IllegalArgumentException("stall " + stallNanos);
            Copy c = new Copy(this);
            c.stallPeriodNanos = periodNanos;
            c.stallNanos = stallNanos;
            return c.build();
        }

        /** TCP's multiplicative decrease (Reno 0.5, CUBIC 0.7). */
        Config withTcpBeta(double beta) {
            Copy c = new Copy(this);
            c.tcpBeta = beta;
            return c.build();
        }

        /** A field-by-field copy of a config, changed by the {@code with...} methods and built again. */
        private static final class Copy {
            double bottleneckBps;
            double softLineBps;
            double tcpLineBps;
            long rttNanos;
            int softPacket;
            int softWindow;
            int cnpBytes;
            int tcpPacket;
            double tcpBeta;
            int minBytes;
            int maxBytes;
            int limitBytes;
            double maxP;
            int wlog;
            Dcqcn.Params dcqcn;
            long settleNanos;
            long endNanos;
            long softStartNanos;
            long stallPeriodNanos;
            long stallNanos;

            Copy(Config c) {
                bottleneckBps = c.bottleneckBps;
                softLineBps = c.softLineBps;
                tcpLineBps = c.tcpLineBps;
                rttNanos = c.rttNanos;
                softPacket = c.softPacket;
                softWindow = c.softWindow;
                cnpBytes = c.cnpBytes;
                tcpPacket = c.tcpPacket;
                tcpBeta = c.tcpBeta;
                minBytes = c.minBytes;
                maxBytes = c.maxBytes;
                limitBytes = c.limitBytes;
                maxP = c.maxP;
                wlog = c.wlog;
                dcqcn = c.dcqcn;
                settleNanos = c.settleNanos;
                endNanos = c.endNanos;
                softStartNanos = c.softStartNanos;
                stallPeriodNanos = c.stallPeriodNanos;
                stallNanos = c.stallNanos;
            }

            Config build() {
                return new Config(
                        bottleneckBps,
                        softLineBps,
                        tcpLineBps,
                        rttNanos,
                        softPacket,
                        softWindow,
                        cnpBytes,
                        tcpPacket,
                        tcpBeta,
                        minBytes,
                        maxBytes,
                        limitBytes,
                        maxP,
                        wlog,
                        dcqcn,
                        settleNanos,
                        endNanos,
                        softStartNanos,
                        stallPeriodNanos,
                        stallNanos);
            }
        }
    }

    /**
     * Over the measured time (after {@code settleNanos}): each flow's delivered bits per second, the link's busy
     * fraction, Jain's index of the two, the largest queue in bytes; over the whole run: the soft flow's packets sent
     * and dropped at the queue, the CNPs, TCP's cuts.
     */
    record Result(
            double softBps,
            double tcpBps,
            double utilisation,
            double jain,
            double maxQueue,
            long softSent,
            long softDropped,
            long cnps,
            long tcpCuts,
            double softRateAtEnd,
            long limits,
            double maxLineBps,
            long cnpsSoonAfterAnother) {
        @Override
        public String toString() {
            return String.format(
                    "soft %.2f Mb/s, tcp %.2f Mb/s, utilisation %.1f%%, Jain %.3f, max queue %.0f B, soft %d sent %d"
                            + " dropped, %d CNPs, %d TCP cuts, soft rate at the end %.2f Mb/s, %d limits, lines up to"
                            + " %.1f Mb/s",
                    softBps / 1e6,
                    tcpBps / 1e6,
                    100 * utilisation,
                    jain,
                    maxQueue,
                    softSent,
                    softDropped,
                    cnps,
                    tcpCuts,
                    softRateAtEnd / 1e6,
                    limits,
                    maxLineBps / 1e6);
        }

        /** The share of the CNPs the sender took within 0.75 ms of the one before (the guest's CNP log: 17%). */
        double cnpsInBursts() {
            return cnps == 0 ? 0 : (double) cnpsSoonAfterAnother / cnps;
        }
    }

    private static final int SOFT_SEND = 0,
            TCP_SEND = 1,
            LINK_DONE = 2,
            SOFT_ARRIVE = 3,
            TCP_ARRIVE = 4,
            CNP = 5,
            SOFT_ACK = 6,
            TCP_ACK = 7;

    private record Event(long at, long seq, int type, boolean flag, long sentAt) {}

    private record Packet(boolean soft, int bytes, boolean marked, long sentAt) {}

    private final Config c;
    private final PriorityQueue<Event> events =
            new PriorityQueue<>((a, b) -> a.at != b.at ? Long.compare(a.at, b.at) : Long.compare(a.seq, b.seq));
    private final ArrayDeque<Packet> queue = new ArrayDeque<>();
    private final SplittableRandom random = new SplittableRandom(23);
    private final Dcqcn sender, receiver;
    private final long half;
    private long seq, queueBytes, idleSince;
    private double avg, maxQueue;
    private boolean linkBusy;
    // soft sender
    private int softInFlight;
    private long softNextLine;
    private boolean softScheduled;
    private long softSent, softDropped, cnps, limits, cnpsSoonAfterAnother, lastCnpTakenAt = -1;
    private double maxLine;
    /**
     * As QpCongestion measures the line: the soft flow's bytes sent, the time and those bytes when its rate was last
     * unlimited (or at the start), the unlimited time and bytes since the last limit that measured its line.
     */
    private long softBytes, unlimitedSince, bytesWhenUnlimited, sampleNanos, sampleBytes;
    // TCP sender
    private double cwnd = 10, ssthresh = Double.MAX_VALUE;
    private int tcpInFlight;
    private long tcpNextLine, tcpRecoverUntil, tcpCuts;
    private boolean tcpScheduled;
    private double softBits, tcpBits;

    private SharedBottleneckModel(Config c) {
        this.c = c;
        sender = new Dcqcn(c.dcqcn);
        receiver = new Dcqcn(c.dcqcn);
        half = c.rttNanos / 2;
    }

    static Result run(Config c) {
        return new SharedBottleneckModel(c).run();
    }

    private Result run() {
        schedule(c.softStartNanos, SOFT_SEND, false, 0);
        schedule(0, TCP_SEND, false, 0);
        softScheduled = tcpScheduled = true;
        while (!events.isEmpty() && events.peek().at < c.endNanos) {
            Event e = events.poll();
            long t = e.at;
            long resumeAt = senderResumesAt(t);
            if (resumeAt > t && (e.type == SOFT_SEND || e.type == SOFT_ACK || e.type == CNP)) {
                events.add(new Event(resumeAt, seq++, e.type, e.flag, e.sentAt)); // taken in arrival order then
                continue;
            }
            switch (e.type) {
                case SOFT_SEND -> {
                    softScheduled = false;
                    trySoft(t);
                }
                case TCP_SEND -> {
                    tcpScheduled = false;
                    tryTcp(t);
                }
                case LINK_DONE -> linkDone(t);
                case SOFT_ARRIVE -> {
                    if (e.flag && receiver.shouldSendCnp(t, c.softPacket, c.cnpBytes)) {
                        cnps++;
                        schedule(t + half, CNP, false, 0);
                    }
                    schedule(t + half, SOFT_ACK, false, 0);
                }
                case TCP_ARRIVE -> schedule(t + half, TCP_ACK, e.flag, e.sentAt);
                case CNP -> {
                    if (lastCnpTakenAt >= 0 && t - lastCnpTakenAt < 750_000) cnpsSoonAfterAnother++;
                    lastCnpTakenAt = t;
                    long line = 0;
                    if (!sender.limited && sender.current().enabled()) { // as QpCongestion: the unlimited time adds up
                        limits++;
                        sampleNanos += t - unlimitedSince;
                        sampleBytes += softBytes - bytesWhenUnlimited;
                        line = sender.lineOf(sampleBytes, sampleNanos);
                        if (!sender.lineHeld(sampleNanos)) sampleNanos = sampleBytes = 0;
                    }
                    sender.onCnp(t, line);
                    if (sender.limited)
                        maxLine = Math.max(maxLine, sender.current().lineRateBps());
                }
                case SOFT_ACK -> {
                    softInFlight--;
                    trySoft(t);
                }
                case TCP_ACK -> tcpAck(t, e.flag, e.sentAt);
                default -> throw new AssertionError(e.type);
            }
        }
        double secs = (c.endNanos - c.settleNanos) / 1e9;
        double s = softBits / secs, p = tcpBits / secs;
        double jain = s + p == 0 ? 0 : (s + p) * (s + p) / (2 * (s * s + p * p));
        double rateAtEnd = sender.limited ? sender.rateBps() : c.softLineBps;
        return new Result(
                s,
                p,
                (s + p) / c.bottleneckBps,
                jain,
                maxQueue,
                softSent,
                softDropped,
                cnps,
                tcpCuts,
                rateAtEnd,
                limits,
                maxLine,
                cnpsSoonAfterAnother);
    }

    /** When the soft sender's threads run again ({@link Config#withSenderStalls}): {@code t} itself when they run. */
    private long senderResumesAt(long t) {
        if (c.stallNanos == 0) return t;
        long inPeriod = t % c.stallPeriodNanos;
        long runs = c.stallPeriodNanos - c.stallNanos;
        return inPeriod < runs ? t : t - inPeriod + c.stallPeriodNanos;
    }

    private void schedule(long at, int type, boolean flag, long sentAt) {
        events.add(new Event(at, seq++, type, flag, sentAt));
    }

    private void trySoft(long t) {
        if (softScheduled || softInFlight >= c.softWindow) return; // an ACK brings the sender back
        long at = t < softNextLine ? softNextLine : t;
        if (at == t && sender.limited) {
            if (!sender.trySend(t, c.softPacket)) // as QpCongestion: back at least once an increase period
            at = Math.min(sender.nextSendAt(), t + sender.current().increasePeriodNanos());
            else if (!sender.limited) { // unlimited again: the next line's measure goes on from here
                unlimitedSince = t;
                bytesWhenUnlimited = softBytes;
            }
        }
        if (at > t) {
            softScheduled = true;
            schedule(at, SOFT_SEND, false, 0);
            return;
        }
        softInFlight++;
        softSent++;
        softBytes += c.softPacket;
        softNextLine = t + (long) (c.softPacket * 8e9 / c.softLineBps);
        if (!enqueue(t, new Packet(true, c.softPacket, false, t))) {
            softDropped++;
            schedule(t + c.rttNanos, SOFT_ACK, false, 0); // its slot back once the loss is found (not delivered)
        }
        softScheduled = true;
        schedule(Math.max(t + 1, softNextLine), SOFT_SEND, false, 0);
    }

    private void tryTcp(long t) {
        if (tcpScheduled || tcpInFlight >= (int) cwnd) return;
        if (t < tcpNextLine) {
            tcpScheduled = true;
            schedule(tcpNextLine, TCP_SEND, false, 0);
            return;
        }
        tcpInFlight++;
        tcpNextLine = t + (long) (c.tcpPacket * 8e9 / c.tcpLineBps);
        if (!enqueue(t, new Packet(false, c.tcpPacket, false, t)))
            schedule(t + c.rttNanos, TCP_ACK, true, t); // a loss: a cut once it is found, like a mark
        tcpScheduled = true;
        schedule(Math.max(t + 1, tcpNextLine), TCP_SEND, false, 0);
    }

    private void tcpAck(long t, boolean ece, long sentAt) {
        tcpInFlight--;
        if (ece && sentAt >= tcpRecoverUntil) { // one cut per round trip: for what was sent after the last one
            cwnd = Math.max(2, cwnd * c.tcpBeta);
            ssthresh = cwnd;
            tcpRecoverUntil = t;
            tcpCuts++;
        } else if (!ece) cwnd += cwnd < ssthresh ? 1 : 1 / cwnd;
        tryTcp(t);
    }

    /** RED with ecn in front of the link: false when the packet is dropped (the queue's limit). */
    private boolean enqueue(long t, Packet p) {
        double w = 1.0 / (1 << c.wlog);
        if (!linkBusy) // Linux RED: an idle queue's average decays as if small packets had come during the idle time
        avg *= Math.pow(1 - w, (t - idleSince) * c.bottleneckBps / 8e9 / 4200);
        avg += (queueBytes - avg) * w;
        if (queueBytes + p.bytes > c.limitBytes) return false;
        boolean mark = avg >= c.maxBytes
                || (avg > c.minBytes && random.nextDouble() < c.maxP * (avg - c.minBytes) / (c.maxBytes - c.minBytes));
        queue.addLast(new Packet(p.soft, p.bytes, mark, p.sentAt));
        queueBytes += p.bytes;
        if (t >= c.settleNanos) maxQueue = Math.max(maxQueue, queueBytes);
        if (!linkBusy) startLink(t);
        return true;
    }

    private void startLink(long t) {
        linkBusy = true;
        schedule(t + (long) (queue.peekFirst().bytes * 8e9 / c.bottleneckBps), LINK_DONE, false, 0);
    }

    private void linkDone(long t) {
        Packet p = queue.pollFirst();
        queueBytes -= p.bytes;
        if (t >= c.settleNanos) {
            if (p.soft) softBits += p.bytes * 8.0;
            else tcpBits += p.bytes * 8.0;
        }
        schedule(t + half, p.soft ? SOFT_ARRIVE : TCP_ARRIVE, p.marked, p.sentAt);
        if (queue.isEmpty()) {
            linkBusy = false;
            idleSince = t;
        } else startLink(t);
    }
}
