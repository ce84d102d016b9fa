package dev.jrdma.soft;

import static org.junit.jupiter.api.Assertions.*;

import org.junit.jupiter.api.Test;

/**
 * Issue 23 §3: DCQCN's arithmetic on a clock the test owns ({@link Dcqcn} takes the time as an argument): the rate cut,
 * the recovery curve (fast recovery, additive, hyper increase, back to line rate), alpha's decay, the pacer and the
 * notification point's one CNP per interval.
 */
class DcqcnTest {
    static final long LINE = 10_000_000_000L, US = 1000;
    static final double G = 1.0 / 256;

    /** 10 Gb/s line, the paper's other settings (55 us periods, F = 5, 10 MB byte counter, R_AI 40 Mb/s, R_HAI 400 Mb/s). */
    static Dcqcn.Params params() {
        return new Dcqcn.Params(
                true, LINE, 10_000_000L, G, 55 * US, 55 * US, 10L << 20, 5, 40_000_000L, 400_000_000L, 50 * US, 0);
    }

    @Test
    void aCnpHalvesTheRateAtFirstAndTheTimerBringsItBackInFastRecoveryThenAdditiveIncrease() {
        Dcqcn d = new Dcqcn(params());
        long t = 1_000_000_000L;
        assertFalse(d.limited, "no CNP yet: the line rate, no pacing");
        d.onCnp(t, LINE);
        assertTrue(d.limited);
        assertEquals(LINE / 2, d.rateBps(), "alpha starts at 1: Rc (1 - 1/2)");
        assertEquals(1.0, d.alpha(), 1e-12, "(1 - g) 1 + g");
        double rate = LINE / 2.0, target = LINE;
        for (int event = 1; event <= 4; event++) { // fast recovery: Rc = (Rt + Rc) / 2, Rt unchanged
            d.catchUp(t + event * 55 * US);
            rate = (target + rate) / 2;
            assertEquals((long) rate, d.rateBps(), "fast recovery event " + event);
        }
        d.catchUp(t + 5 * 55 * US); // T = 5 = F: additive increase, Rt += R_AI (capped at the line rate)
        rate = (Math.min(LINE, target + 40_000_000L) + rate) / 2;
        assertEquals((long) rate, d.rateBps(), "additive increase");
        d.catchUp(t + 100 * 55 * US);
        assertFalse(d.limited, "back at line rate: unlimited again");
        assertEquals(LINE, d.rateBps());
    }

    @Test
    void aSecondCnpCutsByTheRaisedAlphaAndAlphaDecaysInPeriodsWithoutCnp() {
        Dcqcn d = new Dcqcn(params());
        long t = 0;
        d.onCnp(t, LINE);
        d.onCnp(t + 10 * US, LINE); // same alpha period
        double alpha = 1.0; // (1 - g) + g, twice
        assertEquals(alpha, d.alpha(), 1e-12);
        assertEquals(LINE / 4, d.rateBps(), "alpha 1 again: half of the half");
        d.catchUp(t + 10 * 55 * US); // the first period had CNPs: 9 periods of decay after it
        assertEquals(alpha * Math.pow(1 - G, 9), d.alpha(), 1e-12);
        long before = d.rateBps();
        double a = d.alpha();
        d.onCnp(t + 10 * 55 * US, LINE);
        assertEquals((long) (before * (1 - a / 2)), d.rateBps(), 2, "Rc (1 - alpha/2) with the decayed alpha");
    }

    @Test
    void bytesSentCountRateIncreaseEventsAndBothCountersPastFGiveHyperIncrease() {
        Dcqcn.Params p = new Dcqcn.Params(
                true, LINE, 10_000_000L, G, 55 * US, 55 * US, 1 << 20, 5, 40_000_000L, 400_000_000L, 50 * US, 0);
        Dcqcn d = new Dcqcn(p);
        long t = 0;
        d.onCnp(t, LINE);
        d.onCnp(t, LINE);
        d.onCnp(t, LINE); // Rc = line/8, Rt = line/4
        assertEquals(LINE / 8, d.rateBps());
        // five timer events (no bytes): fast recovery to about Rt, then the byte counter's events while T >= F
        d.catchUp(t + 5 * 55 * US); // T = 5: four fast recovery events and one additive
        long afterTimer = d.rateBps();
        assertTrue(afterTimer > LINE / 8 && afterTimer < LINE / 4 + 40_000_000L, "recovered towards Rt: " + afterTimer);
        long now = t + 5 * 55 * US;
        for (int i = 0; i < 5 * 1024; i++) { // 5 MB in 1 KiB packets: BC = 5, as the pacer lets them go
            now = Math.max(now, d.nextSendAt());
            assertTrue(d.trySend(now, 1024));
        }
        // now both counters are at F: the next event is hyper increase, Rt += (min(T, BC) - F + 1) R_HAI
        long rateBefore = d.rateBps();
        for (int i = 0; i < 1024; i++) {
            now = Math.max(now, d.nextSendAt());
            d.trySend(now, 1024);
        }
        assertTrue(d.rateBps() - rateBefore > 100_000_000L, "hyper increase moved the rate by more than R_AI");
    }

    @Test
    void thePacerLetsAPacketGoEveryItsTimeAtTheCurrentRate() {
        Dcqcn d = new Dcqcn(params());
        long t = 1_000_000;
        d.onCnp(t, LINE); // 5 Gb/s: 1,000 bytes take 1.6 us
        assertTrue(d.trySend(t, 1000));
        assertEquals(t + 1600, d.nextSendAt());
        assertFalse(d.trySend(t + 1599, 1000), "too early");
        assertTrue(d.trySend(t + 1600, 1000));
        assertEquals(t + 3200, d.nextSendAt());
        // a pacer left idle starts from now: no saved-up burst
        d.catchUp(t + 500 * US);
        long rate = d.rateBps(); // nine rate-increase events later
        assertTrue(d.limited && rate > LINE / 2, "recovered part of the way: " + rate);
        assertTrue(d.trySend(t + 500 * US, 1000));
        assertEquals(t + 500 * US + (long) (8000 * 1e9 / rate), d.nextSendAt(), 1, "paced from now, at the new rate");
    }

    @Test
    void theNotificationPointSendsOneCnpPerIntervalHoweverManyPacketsAreMarked() {
        Dcqcn d = new Dcqcn(params());
        long t = 5_000_000;
        assertTrue(d.shouldSendCnp(t, 1000, 1000));
        for (long dt = 1; dt < 50 * US; dt += 997) assertFalse(d.shouldSendCnp(t + dt, 1000, 1000), "within 50 us");
        assertTrue(d.shouldSendCnp(t + 50 * US, 1000, 1000));
        Dcqcn off = new Dcqcn(new Dcqcn.Params(
                false, LINE, 10_000_000L, G, 55 * US, 55 * US, 10L << 20, 5, 40_000_000L, 400_000_000L, 50 * US, 0));
        assertFalse(off.shouldSendCnp(t, 1000, 1000), "-Djrdma.soft.dcqcn=off: no CNPs");
        off.onCnp(t, LINE);
        assertFalse(off.limited, "nor rate cuts");
    }

    @Test
    void theDefaultsTakeTheLineAsMeasuredAndTheRatesFollowItAndThePropertiesStillWin() {
        Dcqcn.Params d = Dcqcn.Params.defaults(true);
        assertEquals(0, d.lineRateBps(), "the line is measured");
        Dcqcn.Params at = d.at(44_000_000L); // the soft device alone under TCG
        assertEquals(44_000_000L, at.lineRateBps());
        assertEquals(146_667L, at.additiveBps(), "R_AI = line/300");
        assertEquals(1_466_667L, at.hyperBps(), "R_HAI = line/30");
        assertEquals(44_000L, at.minRateBps(), "line/1000");
        assertEquals(Math.round(44e6 / 8 * 15 * 1.65e-3), at.increaseBytes(), "15 rate-increase periods at the line");
        assertEquals(1_650 * US, at.alphaPeriodNanos(), "the paper's 55 us times 30");
        assertEquals(1_650 * US, at.increasePeriodNanos());
        assertEquals(1_500 * US, at.cnpIntervalNanos());
        assertEquals(G, at.g());
        assertEquals(5, at.fastRecovery());
        assertEquals(params(), params().at(44_000_000L), "every value set: the line measured changes nothing");
        assertThrows(IllegalArgumentException.class, () -> d.at(0));

        assertEquals(Dcqcn.MAX_LINE_BPS, Dcqcn.measuredLine(1000, 0), "no time passed: nothing measurable, the most");
        assertEquals(Dcqcn.MIN_LINE_BPS, Dcqcn.measuredLine(0, 1_000_000), "nothing sent: the least");
        assertEquals(80_000_000L, Dcqcn.measuredLine(10_000, 1_000_000), "10 kB in 1 ms");

        java.util.Properties saved =
                (java.util.Properties) System.getProperties().clone();
        try {
            System.setProperty("jrdma.soft.dcqcn.lineRateMbps", "100");
            System.setProperty("jrdma.soft.dcqcn.additiveMbps", "0.5");
            Dcqcn.Params p = Dcqcn.Params.fromSystemProperties();
            assertEquals(100_000_000L, p.lineRateBps(), "set: not measured");
            assertEquals(100_000_000L, p.at(44_000_000L).lineRateBps());
            assertEquals(500_000L, p.at(1).additiveBps(), "set on its own: as given (fractions of a Mb/s allowed)");
            assertEquals(3_333_333L, p.at(1).hyperBps(), "not set: from the line set (line/30)");
            assertEquals("0.5", p.describe().get("dcqcn.additiveMbps"));
            assertEquals("line/30", p.describe().get("dcqcn.hyperMbps"));
            assertEquals("1650", p.describe().get("dcqcn.alphaPeriodUs"));
            System.setProperty("jrdma.soft.dcqcn.g", "much");
            IllegalArgumentException e =
                    assertThrows(IllegalArgumentException.class, Dcqcn.Params::fromSystemProperties);
            assertTrue(e.getMessage().contains("jrdma.soft.dcqcn.g"), e.getMessage());
            System.setProperty("jrdma.soft.dcqcn.g", "-1");
            assertThrows(IllegalArgumentException.class, Dcqcn.Params::fromSystemProperties);
        } finally {
            System.setProperties(saved);
        }
    }

    @Test
    void aLimitStartsFromTheMeasuredLineAndEndsThere() {
        Dcqcn d = new Dcqcn(Dcqcn.Params.defaults(true));
        d.onCnp(0, 44_000_000L);
        assertEquals(44_000_000L, d.current().lineRateBps());
        assertEquals(22_000_000L, d.rateBps(), "half of the measured line");
        d.catchUp(2_000_000_000L); // two seconds without a CNP: back at that line, unlimited
        assertFalse(d.limited);
        d.onCnp(2_000_000_000L, 200_000_000L); // a faster line measured since then: the next limit follows it
        assertEquals(200_000_000L, d.current().lineRateBps());
        assertEquals(666_667L, d.current().additiveBps(), "line/300");
        d.onCnp(2_000_100_000L, 1_000_000L); // within the limit: the line stays
        assertEquals(200_000_000L, d.current().lineRateBps());
    }

    /**
     * CNPs that arrive closer together than the monitor period (half the notification point's interval: it spaces
     * them more) were held back on the way and cut the rate once; a CNP after the period cuts again.
     */
    @Test
    void cnpsThatArriveTogetherCutTheRateOnce() {
        Dcqcn d = new Dcqcn(Dcqcn.Params.defaults(true));
        long t = 1_000_000_000L;
        d.onCnp(t, 44_000_000L);
        assertEquals(22_000_000L, d.rateBps());
        assertEquals(750 * US, d.current().rateReduceMonitorNanos());
        for (long dt = 0; dt < 750 * US; dt += 50 * US) d.onCnp(t + dt, 0); // a burst: one piece of news
        assertEquals(22_000_000L, d.rateBps(), "no second cut within 0.75 ms");
        long before = d.rateBps();
        double a = d.alpha();
        d.onCnp(t + 750 * US, 0);
        assertEquals((long) (before * (1 - a / 2)), d.rateBps(), 2, "the period over: the next CNP cuts");
        Dcqcn paper = new Dcqcn(params()); // monitor 0: each CNP cuts, as the paper's reaction point
        paper.onCnp(t, LINE);
        paper.onCnp(t, LINE);
        assertEquals(LINE / 4, paper.rateBps());
    }

    /**
     * A limit that begins less than 50 ms of unlimited time after the last one measured its line keeps that line
     * (under emulation a limit ended and the next began within one burst of CNPs, and the line measured over the
     * microseconds between was the window's burst); the unlimited times add up until they make 50 ms. The first
     * limit measures whatever the time.
     */
    @Test
    void aLimitThatBeginsSoonAfterTheLastOneKeepsItsLine() {
        Dcqcn d = new Dcqcn(Dcqcn.Params.defaults(true));
        assertFalse(d.lineHeld(1_000_000), "no line measured yet");
        long first = d.lineOf(5_500, 1_000_000); // 5.5 kB in 1 ms: 44 Mb/s, measured although short
        assertEquals(44_000_000L, first);
        d.onCnp(0, first);
        d.catchUp(2_000_000_000L);
        assertFalse(d.limited, "back at the line");
        assertTrue(d.lineHeld(100_000), "0.1 ms unlimited: too short to measure");
        assertEquals(44_000_000L, d.lineOf(262_144, 100_000), "a 256 KiB window in 0.1 ms is not a 21 Gb/s line");
        assertEquals(44_000_000L, d.lineOf(1000, 49_999_999), "nor is a stall");
        assertFalse(d.lineHeld(Dcqcn.MIN_LINE_SAMPLE_NANOS));
        assertEquals(80_000_000L, d.lineOf(500_000, Dcqcn.MIN_LINE_SAMPLE_NANOS), "50 ms: measured");
        d.onCnp(2_000_000_000L, 80_000_000L);
        assertEquals(80_000_000L, d.current().lineRateBps());
    }

    /**
     * Issue 23's bottleneck on the model's clock (SharedBottleneckModel: share-bottleneck.sh's RED with {@code ecn},
     * a soft flow sending at 2.2x the bottleneck, a TCP flow with ECN): with the defaults, the soft flow and TCP share
     * a 20 Mb/s bottleneck (the guest's) fairly and fill it, also when TCP's sender cannot take more than 60% of it
     * (under emulation TCP's JVMs share the CPU with the soft flow's); nothing lost, the queue far below RED's limit.
     */
    @Test
    void theDefaultsShareTheGuestsBottleneckWithTcpFairlyAndFillIt() {
        Dcqcn.Params defaults = Dcqcn.Params.defaults(true);
        for (double tcpLine : new double[] {1e9, 12e6}) {
            SharedBottleneckModel.Result r = SharedBottleneckModel.run(
                    SharedBottleneckModel.Config.guest(defaults, 44e6).withTcpLine(tcpLine));
            String why = "TCP's sender at " + tcpLine / 1e6 + " Mb/s: " + r;
            assertTrue(r.utilisation() >= 0.9, why);
            assertTrue(r.jain() >= 0.9, why);
            assertTrue(r.softBps() >= 0.3 * 20e6 && r.tcpBps() >= 0.3 * 20e6, why);
            assertEquals(0, r.softDropped(), why);
            assertTrue(r.maxQueue() < 648_000 / 2, why);
            assertTrue(r.cnps() > 10, why);
            assertTrue(r.softRateAtEnd() < 44e6, "limited at the end: " + why);
        }
    }

    /**
     * The same model across bottlenecks of 20 Mb/s to 1 Gb/s, base round trips of 0.1 to 5 ms, the soft line 2 to 5
     * times the bottleneck, TCP Reno or CUBIC-like (a cut to 0.7), TCP's sender free or held to 60%: one setting (the
     * defaults, the line measured) gives utilisation >= 90% and Jain >= 0.9 in each, also when the soft flow starts 2 s
     * after its measure did (a QP's from RTS: the first limit's line far too low, its rate cut to a few kb/s, and the
     * pacer must not keep a packet waiting at that rate once it recovers); a line set 2x too low or too high still
     * gives >= 85% and 0.85 (set too high, the soft flow cuts from further up).
     */
    @Test
    void oneSettingSharesBottlenecksFrom20MbpsTo1GbpsWithTcp() {
        double[][] scenarios = { // bottleneck b/s, round trip ns, soft line x bottleneck
            {20e6, 1e6, 2.2}, {20e6, 5e6, 2.2}, {20e6, 0.2e6, 5}, {200e6, 0.2e6, 2}, {1e9, 0.1e6, 3}
        };
        for (double[] s : scenarios)
            for (double tcpShare : new double[] {50, 0.6})
                for (double beta : new double[] {0.5, 0.7})
                    for (double misjudged : new double[] {0, -1, 0.5, 2}) { // 0: measured, -1: measured, late start
                        Dcqcn.Params p = misjudged <= 0
                                ? Dcqcn.Params.defaults(true)
                                : withLine(Dcqcn.Params.defaults(true), (long) (misjudged * s[0] * s[2]));
                        SharedBottleneckModel.Config c = SharedBottleneckModel.Config.guest(p, 0)
                                .withBottleneck(s[0], (long) s[1])
                                .withSoftLine(s[2])
                                .withTcpLine(tcpShare * s[0])
                                .withTcpBeta(beta)
                                .withSoftStart(misjudged < 0 ? 2_000_000_000L : 0);
                        SharedBottleneckModel.Result r = SharedBottleneckModel.run(c);
                        double floor = misjudged <= 0 ? 0.9 : 0.85;
                        String why = java.util.Arrays.toString(s) + " TCP x" + tcpShare + " beta " + beta
                                + " line misjudged x" + misjudged + ": " + r;
                        assertTrue(r.utilisation() >= floor, why);
                        assertTrue(r.jain() >= floor, why);
                        assertEquals(0, r.softDropped(), why);
                        assertTrue(r.maxQueue() < c.limitBytes() * 0.9, why);
                    }
    }

    /**
     * Bursty feedback, as under QEMU's TCG: the soft sender's threads are off the CPU for part of every few ms (5 of
     * 10, 15 of 20, 40 of 50, 10 of 30), so it sends nothing then and takes the ACKs and CNPs that came meanwhile in
     * one burst; its line is what it sends while it runs (100 Mb/s) or set so that it averages 44 Mb/s (the device
     * alone in the guest). Before the line hold and the monitor period, a limit ended and the next began within a
     * burst, its line measured over no time was 100 Gb/s and the soft flow kept up to 94% of the link: at Reno's cut,
     * 8 of these 16 cases failed (15 of 20 and 40 of 50 ms: Jain 0.57-0.58 in seven, 89% busy in one). Now: >= 90%
     * busy and Jain >= 0.9 in each, nothing lost, no line above what the sender can send.
     */
    @Test
    void theDefaultsShareTheGuestsBottleneckWhenTheSendersThreadsStallAndCnpsComeInBursts() {
        long ms = 1_000_000;
        long[][] stalls = {{10 * ms, 5 * ms}, {20 * ms, 15 * ms}, {50 * ms, 40 * ms}, {30 * ms, 10 * ms}};
        for (long[] stall : stalls)
            for (boolean averages44 : new boolean[] {false, true})
                for (double tcpLine : new double[] {1e9, 12e6})
                    for (double beta : new double[] {0.5, 0.7}) {
                        double line = averages44 ? 44e6 * stall[0] / (stall[0] - stall[1]) : 100e6;
                        SharedBottleneckModel.Config c = SharedBottleneckModel.Config.guest(
                                        Dcqcn.Params.defaults(true), line)
                                .withSenderStalls(stall[0], stall[1])
                                .withTcpLine(tcpLine)
                                .withTcpBeta(beta);
                        SharedBottleneckModel.Result r = SharedBottleneckModel.run(c);
                        String why = "off " + stall[1] / ms + " of " + stall[0] / ms + " ms, line " + line / 1e6
                                + " Mb/s, TCP's sender " + tcpLine / 1e6 + " Mb/s, beta " + beta + ": " + r;
                        assertTrue(r.utilisation() >= 0.9, why);
                        assertTrue(r.jain() >= 0.9, why);
                        assertEquals(0, r.softDropped(), why);
                        assertTrue(r.maxQueue() < c.limitBytes() * 0.9, why);
                        assertTrue(r.maxLineBps() <= line * 1.05, "no line above what the sender sends: " + why);
                    }
    }

    /**
     * What the guest's failing bottleneck runs were (guest20: one run with every CNP's arrival logged, {@code
     * -Djrdma.soft.dcqcn.logCnps=true}): 60 CNPs a second, 17% of them within 0.75 ms of the one before (bursts of 1.2
     * on average), a new limit every 0.19 s; soft 15.8 Mbit/s, TCP 0.3, 80.5% busy, Jain 0.519 (session 19: 14.8, 1.4,
     * 81%, 0.594). The model's stalls that give such bursts (5 of every 10 or 20 ms, 10 of every 50; 15-29% of the
     * CNPs within 0.75 ms of the one before) share the link fairly and fill it while TCP's sender is free; they give the
     * guest's figures (the link a fifth idle, Jain below 0.6) only with TCP's sender held to about 1 Mb/s, as the
     * guest's TCP JVMs are when the soft flow's threads spin on the two vCPUs. No congestion control can then give
     * Jain 0.9 at 90% busy: TCP at 1 Mb/s bounds Jain to 0.55 there.
     */
    @Test
    void theGuestsFailingRunsAreTheModelsWithTcpsSenderHeldNotItsBurstyCnps() {
        long ms = 1_000_000;
        long[][] stalls = {{10 * ms, 5 * ms}, {20 * ms, 5 * ms}, {50 * ms, 10 * ms}};
        for (long[] stall : stalls) {
            SharedBottleneckModel.Config c = SharedBottleneckModel.Config.guest(Dcqcn.Params.defaults(true), 44e6)
                    .withSenderStalls(stall[0], stall[1]);
            SharedBottleneckModel.Result free = SharedBottleneckModel.run(c);
            SharedBottleneckModel.Result held = SharedBottleneckModel.run(c.withTcpLine(1e6));
            String why =
                    "off " + stall[1] / ms + " of " + stall[0] / ms + " ms: TCP free: " + free + ", TCP held: " + held;
            assertTrue(free.cnpsInBursts() > 0.1 && free.cnpsInBursts() < 0.35, why);
            assertTrue(free.jain() >= 0.9 && free.utilisation() >= 0.9, why);
            assertTrue(held.jain() < 0.6 && held.utilisation() < 0.85, why);
        }
    }

    /**
     * A QP of small messages (256 B WRITEs: 330 bytes a packet on the wire, a 1 KiB path MTU: a window of 256) behind
     * the guest's bottleneck. RED marks packets, not bytes, so such a flow has ten times the marks of a flow of full
     * packets for its bytes: with a CNP for every marked packet (the paper's notification point) it is cut far more
     * often than TCP (once a round trip) and keeps a quarter of the link (Jain below 0.85, with its line measured from
     * the bytes it sends); with a CNP once the marked packets make the MTU it shares as a flow of full packets does.
     * Measured as a full packet per PSN (QpCongestion before), its line was 12.6x what it sends.
     */
    @Test
    void aFlowOfSmallMessagesSharesFairlyWhenACnpStandsForTheMtuOfMarkedBytes() {
        SharedBottleneckModel.Config small = SharedBottleneckModel.Config.guest(Dcqcn.Params.defaults(true), 44e6)
                .withSoftPackets(256 + 74, 1024);
        SharedBottleneckModel.Result r = SharedBottleneckModel.run(small);
        assertTrue(r.utilisation() >= 0.9 && r.jain() >= 0.9, r.toString());
        assertEquals(0, r.softDropped(), r.toString());
        assertTrue(r.maxQueue() < 648_000 / 2, r.toString());
        SharedBottleneckModel.Result perPacket = SharedBottleneckModel.run(small.withCnpPerMarkedPacket());
        assertTrue(perPacket.jain() < 0.85 && perPacket.tcpBps() > 2 * perPacket.softBps(), perPacket.toString());
        SharedBottleneckModel.Result off =
                SharedBottleneckModel.run(SharedBottleneckModel.Config.guest(Dcqcn.Params.defaults(false), 44e6)
                        .withSoftPackets(256 + 74, 1024));
        assertTrue(off.jain() < 0.75 && off.softBps() > 3 * off.tcpBps(), "without DCQCN TCP starves: " + off);
    }

    /**
     * Why the defaults changed: the NIC's constants (100 Gb/s line, 55 us periods, 40 Mb/s steps) and DCQCN off leave
     * TCP a small share of the guest's bottleneck in the model (the guest measured Jain 0.69-0.86 for both).
     */
    @Test
    void theNicsConstantsAndNoCongestionControlLeaveTcpLittleOfTheGuestsBottleneck() {
        Dcqcn.Params nic = new Dcqcn.Params(
                true,
                100_000_000_000L,
                10_000_000L,
                G,
                55 * US,
                55 * US,
                10L << 20,
                5,
                40_000_000L,
                400_000_000L,
                50 * US,
                0);
        for (Dcqcn.Params p : new Dcqcn.Params[] {nic, Dcqcn.Params.defaults(false)}) {
            SharedBottleneckModel.Result r = SharedBottleneckModel.run(SharedBottleneckModel.Config.guest(p, 44e6));
            assertTrue(r.jain() < 0.75 && r.softBps() > 3 * r.tcpBps(), r.toString());
        }
    }

    private static Dcqcn.Params withLine(Dcqcn.Params p, long line) {
        return new Dcqcn.Params(
                p.enabled(),
                line,
                p.minRateBps(),
                p.g(),
                p.alphaPeriodNanos(),
                p.increasePeriodNanos(),
                p.increaseBytes(),
                p.fastRecovery(),
                p.additiveBps(),
                p.hyperBps(),
                p.cnpIntervalNanos(),
                p.rateReduceMonitorNanos());
    }
}
