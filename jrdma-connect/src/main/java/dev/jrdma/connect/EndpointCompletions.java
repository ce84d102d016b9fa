package dev.jrdma.connect;

import dev.jrdma.verbs.QpAttr;
import dev.jrdma.verbs.QpState;
import dev.jrdma.verbs.VerbsException;
import dev.jrdma.verbs.WcOpcode;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.Socket;
import java.util.Collections;
import java.util.Iterator;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

/**
 * What comes back to an {@link Endpoint}: completions (sends done, messages received and delivered or lent),
 * credits returned, timeouts, failures that break the endpoint, and the peer's goodbye or loss. All of it runs on the
 * group's owner (the control channel's thread hands it commands), with no lock.
 */
abstract class EndpointCompletions extends EndpointCore {
    EndpointCompletions(EndpointGroup group, boolean ownsGroup, Socket socket) {
        super(group, ownsGroup, socket);
    }

    /**
     * The peer said goodbye (from the control channel). New sends fail at once (the peer takes nothing more); what
     * came before the goodbye is still delivered first, by the group's owner.
     */
    void peerBye() {
        if (peerEnded == null) peerEnded = peerClosedError(true);
        group.submit(() -> onPeerClosed(true));
    }

    /** The peer went away without a goodbye. */
    void peerLost() {
        if (peerEnded == null) peerEnded = peerClosedError(false);
        group.submit(() -> onPeerClosed(false));
    }

    RdmaException peerClosedError(boolean graceful) {
        return graceful
                ? new RdmaException(
                        RdmaException.Kind.PEER_CLOSED, "the peer at " + remoteAddress() + " closed the connection")
                : new RdmaException(
                        RdmaException.Kind.PEER_GONE,
                        "the peer at " + remoteAddress()
                                + " is gone: its connection ended without a goodbye (process exited or crashed, or the network failed)");
    }

    /** The peer sent what its control channel does not carry (it is disconnected): the endpoint ends with PROTOCOL_ERROR. */
    void controlViolation(String what) {
        group.submit(() -> {
            breakWith(new RdmaException(RdmaException.Kind.PROTOCOL_ERROR, what));
            runAfterUnlock();
            advanceClose();
        });
    }

    /** The peer acknowledged our goodbye (or can no longer): from the control channel's thread. */
    void peerAcked() {
        if (onOwner()) markPeerAcked.run();
        else group.submit(markPeerAcked);
    }

    private final Runnable markPeerAcked = () -> {
        goodbye.peerAcknowledged();
        advanceClose();
    };

    /** Lends a received message in its slot to the lent handler (not reposted until released). Owner only. */
    void lend(int slot, int length, boolean hasImmediate, int immediate) {
        lentOut++;
        lentReady.add(lentSlots[slot].lend(length, hasImmediate, immediate));
        queueLentDrain();
    }

    /**
     * A lent message's release: its slot is posted again and the peer gets the credit back. On the owner at once,
     * from another thread through the message's own command (nothing allocated).
     */
    void release(LentMessage m) {
        if (!m.lent) throw new IllegalStateException(m + " was released already");
        if (onOwner()) {
            releaseOnOwner(m);
        } else if (state == State.CLOSED) {
            // after the close the last release gives the receive buffers back: done when this returns
            onOwnerAndWait(() -> {
                releaseOnOwner(m);
                return null;
            });
        } else if (!group.submit(m.releaseOnOwner)) {
            // the group is closed (its receive buffers go with it) or its owner stalled: the message stays lent
            LOG.log(System.Logger.Level.WARNING, this + ": the release of " + m + " was refused by the group's owner");
        }
    }

    /** {@link #release} on the owner. */
    void releaseOnOwner(LentMessage m) {
        if (!m.lent) {
            LOG.log(System.Logger.Level.WARNING, this + ": " + m + " was released twice (from another thread)");
            return;
        }
        m.released();
        lentOut--;
        if (m.slot() >= 0) repost(m.slot());
        credits.consumed();
        if (state == State.CONNECTED || state == State.CLOSING) {
            pump();
            maybeReturnCredits();
        }
        boolean closeBuffers = recvBufsCloseDeferred && lentOut == 0;
        if (closeBuffers) recvBufsCloseDeferred = false;
        runAfterUnlock();
        if (closeBuffers) recvBufs.close();
    }

    /** Runs the lent handler: a RuntimeException is logged, an Error ends this endpoint (logged too). */
    void runLentHandler(LentMessageHandler h, LentMessage m) {
        try {
            h.onMessage(m);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, this + ": the lent receive handler threw " + e, e);
        } catch (Error e) {
            failOnCompletionThread("the lent receive handler threw " + e, e);
        }
    }

    // ---- completions ----------------------------------------------------------------------------------------

    void onCompletion(WorkCompletion wc) {
        if ((wc.wrId & RECV_TAG) != 0) onRecv(wc);
        else onSendCompletion(wc);
        if (state == State.CONNECTED || state == State.CLOSING) {
            pump();
            maybeReturnCredits();
        }
        runAfterUnlock();
        if (closeStarted) advanceClose();
    }

    void onRecv(WorkCompletion wc) {
        int slot = (int) (wc.wrId & ~RECV_TAG);
        if (!wc.isSuccess()) {
            if (wc.status != WcStatus.WR_FLUSH_ERR || state == State.CONNECTED) {
                breakWith(new RdmaException(
                        RdmaException.Kind.COMPLETION_ERROR, "receive failed: " + wc.explain(), wc.status, null));
            }
            return;
        }
        if (wc.opcode == WcOpcode.RECV_RDMA_WITH_IMM) {
            if (!takePeerCredit()) return;
            if (lentHandler != null) {
                lend(slot, 0, true, wc.immData);
                return;
            }
            repost(slot);
            deliver(new Message(new byte[0], true, wc.immData));
            return;
        }
        int type = wc.hasImm() ? wc.immData >>> 24 : TYPE_DATA;
        int returned = wc.hasImm() ? wc.immData & CreditWindow.MAX_RETURN : 0;
        credits.returned(returned);
        if (type == TYPE_CREDIT) {
            repost(slot);
            return;
        }
        if (!takePeerCredit()) return;
        if (lentHandler != null) {
            lend(slot, wc.byteLen, false, 0);
            return;
        }
        byte[] data = new byte[wc.byteLen];
        MemorySegment.copy(
                recvBufs.segment(), ValueLayout.JAVA_BYTE, (long) slot * cfg.messageSize(), data, 0, wc.byteLen);
        repost(slot);
        deliver(new Message(data, false, 0));
    }

    /**
     * A data message used one of the credits the peer was given. A peer that sends without one ignores flow
     * control: it breaks its own endpoint, so what we hold for it never exceeds the credits granted (the inbox
     * holds at most recvQueueDepth messages). Owner only.
     */
    boolean takePeerCredit() {
        if (credits.arrived()) return true;
        breakWith(new RdmaException(
                RdmaException.Kind.PROTOCOL_ERROR,
                "the peer at " + remoteAddress()
                        + " sent a message without a credit (it had used all " + cfg.recvQueueDepth()
                        + " it was given): it ignores flow control;"
                        + " the connection is ended so that it cannot make this side hold more"));
        return false;
    }

    /** Messages received and not yet taken by the application (tests: never more than the credits granted). */
    int inboxSize() {
        return onOwnerAndWait(inbox::size);
    }

    void repost(int slot) {
        if (state == State.CLOSED || qp.isClosed()) return;
        try {
            postRecv(slot);
        } catch (VerbsException e) {
            if (state == State.CONNECTED) {
                breakWith(new RdmaException(
                        RdmaException.Kind.POST_ERROR,
                        "reposting a receive buffer failed: " + e.getMessage(),
                        null,
                        e));
            }
        }
    }

    void deliver(Message m) {
        Consumer<Message> h = handler;
        if (h != null) {
            credits.consumed();
            afterUnlock.add(() -> runHandler(h, m));
            return;
        }
        CompletableFuture<Message> w;
        while ((w = waiters.poll()) != null) {
            if (!w.isDone()) {
                credits.consumed();
                CompletableFuture<Message> target = w;
                afterUnlock.add(() -> target.complete(m));
                return;
            }
        }
        inbox.add(m);
    }

    /** Runs the application's receive handler: a RuntimeException is logged, an Error ends this endpoint (logged too). */
    void runHandler(Consumer<Message> h, Message m) {
        try {
            h.accept(m);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, this + ": the receive handler threw " + e, e);
        } catch (Error e) {
            failOnCompletionThread("the receive handler threw " + e, e);
        }
    }

    /**
     * Something was thrown on the completion thread while it served this endpoint (an Error from the application,
     * or a bug): logged, and this endpoint ends (its operations and receives fail with HANDLER_ERROR, its QP goes to
     * ERR); the group's other endpoints are served on.
     */
    void failOnCompletionThread(String what, Throwable t) {
        LOG.log(System.Logger.Level.ERROR, this + ": " + what + "; the endpoint is ended", t);
        breakWith(new RdmaException(RdmaException.Kind.HANDLER_ERROR, what + "; the endpoint was ended", null, t));
        runAfterUnlock();
        advanceClose();
    }

    void onSendCompletion(WorkCompletion wc) {
        if (--postedWrs == 0) releaseHeld();
        Operation op = inFlight.remove(wc.wrId);
        if (op == null) return; // already failed (flushed after an error, or timed out)
        if (state == State.PEER_CLOSED && inFlight.isEmpty()) {
            goodbye.endDrain();
            goodbye.acknowledge();
        }
        if (!wc.isSuccess()) {
            RdmaException e = new RdmaException(
                    RdmaException.Kind.COMPLETION_ERROR, op.what() + " failed: " + wc.explain(), wc.status, null);
            if ((wc.status == WcStatus.WR_FLUSH_ERR && failure != null) || state == State.PEER_CLOSED) {
                failOp(op, derived(op, failure));
            } else {
                failOp(op, e);
                breakWith(e);
            }
            return;
        }
        recordEnd(op, null);
        Object result = null;
        switch (op.kind) {
            case CAS, FAA -> result = op.tmp.segment().get(ValueLayout.JAVA_LONG, 0);
            case BIND -> result = op.newRkey;
            default -> {}
        }
        if (op.tmp != null) {
            op.tmp.close();
            op.tmp = null;
        }
        if (op.awaited()) {
            op.result = result;
            afterUnlock.add(op);
        } else {
            recycle(op);
        }
    }

    // ---- the leak watch of lent messages ---------------------------------------------------------------------

    /** Scans of a lent message before it counts as held past the group's limit: the limit is watched in eighths. */
    static final int LENT_SCANS = 8;

    /**
     * Reports lent messages held past the group's {@link EndpointGroup#lentHoldLimit()} (seen lent by more than
     * {@link #LENT_SCANS} scans an eighth of the limit apart: held at least the limit, reported within an eighth more);
     * after the close, those still held once the grace passed. Netty's leak detector cannot see them: the buffers are
     * reused and never collected. Owner only.
     *
     * @return whether a message is still lent (the watch goes on)
     */
    boolean watchLent(long now) {
        if (lentOut == 0 || lentSlots == null) return false;
        if (state == State.CLOSED) {
            if (now - closedAt < EndpointGroup.LENT_CLOSE_GRACE_NANOS) return true;
            for (LentMessage m : lentSlots) {
                if (m.lent && !m.reported) reportLeak(m, "is still held after its endpoint closed");
            }
            return false;
        }
        if (now - nextLentScan < 0) return true;
        long limit = group.lentHoldLimitNanos();
        nextLentScan = now + Math.max(ProgressCore.TIMEOUT_PERIOD_NANOS, limit / LENT_SCANS);
        for (LentMessage m : lentSlots) {
            if (m.lent && !m.reported && ++m.scansHeld > LENT_SCANS) {
                reportLeak(m, "was held for more than " + limit / 1_000_000 + " ms");
            }
        }
        return true;
    }

    private void reportLeak(LentMessage m, String what) {
        m.reported = true;
        lentLeaks.incrementAndGet();
        group.countLentLeak();
        Throwable site = m.site();
        LOG.log(
                System.Logger.Level.WARNING,
                this + ": " + m + " " + what + " without release(): a leak? Its receive buffer and the peer's credit"
                        + " stay taken until it is released"
                        + (site != null
                                ? "; where it was lent and last touched follows"
                                : " (-Djrdma.connect.leakSites=true, or Netty's leak detection level ADVANCED or"
                                        + " PARANOID, records where)"),
                site);
    }

    /** Called by the group's owner every few milliseconds (also the close's deadlines). */
    void checkTimeouts(long now) {
        if (lentOut > 0) watchLent(now);
        if (!inFlight.isEmpty() || !pending.isEmpty()) {
            if (state == State.PEER_CLOSED && goodbye.drainExpired(now)) {
                goodbye.endDrain();
                failAll(failure);
                toError();
                goodbye.acknowledge();
            }
            // an iterator is an allocation: none while only posted requests are in flight
            for (Iterator<Operation> it = pending.isEmpty() ? Collections.emptyIterator() : pending.iterator();
                    it.hasNext(); ) {
                Operation op = it.next();
                if (now - op.deadline > 0) {
                    it.remove();
                    String why = op.needsCredit() && !credits.canSend()
                            ? "the peer has not freed a receive buffer for "
                                    + cfg.timeout().toMillis() + " ms (it is not consuming messages: flow control)"
                            : "it could not be posted within " + cfg.timeout().toMillis() + " ms (send queue full)";
                    failOp(op, new RdmaException(RdmaException.Kind.TIMEOUT, op.what() + " timed out: " + why));
                }
            }
            Operation expired = null;
            for (int slot = 0; slot < inFlight.capacity() && expired == null; slot++) {
                Operation op = inFlight.at(slot);
                if (op != null && op.deadline != Long.MAX_VALUE && now - op.deadline > 0) expired = op;
            }
            if (expired != null) {
                inFlight.remove(expired.wrId);
                RdmaException e = new RdmaException(
                        RdmaException.Kind.TIMEOUT,
                        expired.what() + " timed out: no completion within "
                                + cfg.timeout().toMillis()
                                + " ms; the peer is unreachable or not responding (process gone, host down, or path broken)");
                failOp(expired, e);
                breakWith(e);
            }
            runAfterUnlock();
        }
        advanceClose();
    }

    void onPeerClosed(boolean graceful) {
        if (state != State.CONNECTED && state != State.CLOSING) return;
        RdmaException e = peerEnded != null ? peerEnded : peerClosedError(graceful);
        failure = e;
        state = State.PEER_CLOSED;
        if (!graceful) JfrEvents.error(self(), e);
        // nothing more will be posted; what is in flight may still complete (its ACK can trail the goodbye)
        for (Operation op : pending) failOp(op, derived(op, e));
        pending.clear();
        CompletableFuture<Message> w;
        while ((w = waiters.poll()) != null) {
            CompletableFuture<Message> target = w;
            RdmaException we = derived(null, e);
            afterUnlock.add(() -> target.completeExceptionally(we));
        }
        endLent(e);
        if (inFlight.isEmpty()) {
            toError();
            goodbye.acknowledge();
        } else {
            goodbye.startDrain(group.clock().nanoTime());
        }
        runAfterUnlock();
        advanceClose();
    }

    void toError() {
        try {
            qp.modify(new QpAttr().state(QpState.ERR));
        } catch (RuntimeException ignored) {
            // already in error or closed
        }
    }

    /** The connection can no longer be used: fail everything with {@code cause}. Owner only. */
    void breakWith(RdmaException cause) {
        if (state != State.CONNECTED && state != State.CLOSING) return;
        failure = cause;
        state = State.BROKEN;
        JfrEvents.error(self(), cause);
        failAll(cause);
        try {
            qp.modify(new QpAttr().state(QpState.ERR));
        } catch (RuntimeException ignored) {
            // already in error or closed
        }
    }

    void failAll(RdmaException cause) {
        inFlight.drain(op -> failOp(op, derived(op, cause)));
        for (Operation op : pending) failOp(op, derived(op, cause));
        pending.clear();
        CompletableFuture<Message> w;
        while ((w = waiters.poll()) != null) {
            CompletableFuture<Message> target = w;
            RdmaException e = derived(null, cause);
            afterUnlock.add(() -> target.completeExceptionally(e));
        }
        endLent(cause);
    }

    /** Tells the lent handler, once, that no message comes any more. Owner only. */
    void endLent(RdmaException cause) {
        if (lentHandler == null || lentEnd != null) return;
        lentEnd = derived(null, cause);
        queueLentDrain();
    }

    /** Has the lent messages and the end handed to the handler at the end of the step. Owner only. */
    void queueLentDrain() {
        if (lentDrainQueued) return;
        lentDrainQueued = true;
        afterUnlock.add(drainLentTask);
    }

    /**
     * Hands the lent messages, then the end, to the handler in order. Owner only; not again from inside the handler
     * (a release there that lends more leaves them to this loop).
     */
    void drainLent() {
        lentDrainQueued = false;
        if (lentDraining) return;
        lentDraining = true;
        while (true) {
            LentMessage m;
            RdmaException end = null;
            m = lentReady.poll();
            if (m == null) {
                if (lentEnd != null && !lentEndTold) {
                    lentEndTold = true;
                    end = lentEnd;
                } else {
                    lentDraining = false;
                    return;
                }
            }
            if (m != null) {
                runLentHandler(lentHandler, m);
            } else {
                try {
                    lentHandler.onEnd(end);
                } catch (RuntimeException thrown) {
                    LOG.log(
                            System.Logger.Level.WARNING,
                            this + ": the lent receive handler's onEnd threw " + thrown,
                            thrown);
                }
            }
        }
    }

    void failOp(Operation op, RdmaException e) {
        recordEnd(op, e);
        if (op.tmp != null) {
            RegisteredBuffer t = op.tmp;
            op.tmp = null;
            // a WR given up (timed out, failed with the endpoint) may still be at the device: its buffer waits
            if (op.posted && postedWrs > 0) heldUntilRetired.add(t);
            else t.close();
        }
        if (op.awaited()) {
            op.error = e;
            afterUnlock.add(op);
        } else {
            recycle(op);
        }
    }

    /** No WR is at the device any more (or the QP is gone): the given-up operations' buffers go back. Owner only. */
    void releaseHeld() {
        for (int i = 0; i < heldUntilRetired.size(); i++)
            heldUntilRetired.get(i).close();
        heldUntilRetired.clear();
    }

    /** Buffers of given-up operations still kept from the pool (tests). */
    int heldBuffers() {
        return onOwnerAndWait(heldUntilRetired::size);
    }
}
