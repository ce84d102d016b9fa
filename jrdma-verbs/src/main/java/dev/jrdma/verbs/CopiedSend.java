package dev.jrdma.verbs;

/**
 * {@link QueuePair#prepareSend}'s default: a copy of the chain, posted with {@link QueuePair#postSend} (for a provider
 * without a faster way; the native provider writes the requests into native memory once instead).
 */
final class CopiedSend implements PreparedSend {
    /** Why a BIND_MW is refused (by every provider): each bind must name its own new rkey. */
    static final String NOT_PREPARABLE =
            "a BIND_MW request cannot be prepared (each bind takes a new rkey): post it with postSend";

    private final QueuePair qp;
    private final SendWorkRequest first;
    private final long wrId;

    CopiedSend(QueuePair qp, SendWorkRequest wr) {
        if (wr == null) throw new PostException("ibv_post_send", VerbsException.EINVAL, 0, "the work request is null");
        if (qp.isClosed()) throw new ClosedException("ibv_post_send", qp.toString());
        this.qp = qp;
        SendWorkRequest head = null, tail = null;
        int index = 0;
        for (SendWorkRequest w = wr; w != null; w = w.next, index++) {
            if (w.opcode == WrOpcode.BIND_MW)
                throw new PostException("ibv_post_send", VerbsException.EINVAL, index, NOT_PREPARABLE);
            SendWorkRequest c = copy(w);
            if (head == null) head = c;
            else tail.next = c;
            tail = c;
        }
        first = head;
        wrId = head.wrId;
    }

    private static SendWorkRequest copy(SendWorkRequest w) {
        SendWorkRequest c = new SendWorkRequest(Math.max(1, w.maxSge()));
        c.wrId = w.wrId;
        c.opcode = w.opcode;
        c.flags.addAll(w.flags);
        c.immData = w.immData;
        c.invalidateRkey = w.invalidateRkey;
        c.remoteAddr = w.remoteAddr;
        c.rkey = w.rkey;
        c.compareAdd = w.compareAdd;
        c.swap = w.swap;
        c.bindMw = w.bindMw;
        c.bindRkey = w.bindRkey;
        c.bindMr = w.bindMr;
        c.bindAddr = w.bindAddr;
        c.bindLength = w.bindLength;
        c.bindAccess.addAll(w.bindAccess);
        c.ah = w.ah;
        c.remoteQpn = w.remoteQpn;
        c.remoteQkey = w.remoteQkey;
        for (int i = 0; i < w.numSge(); i++) {
            Sge s = w.sge(i);
            c.sge(i).set(s.addr, s.length, s.lkey);
        }
        c.numSge(w.numSge());
        return c;
    }

    @Override
    public QueuePair qp() {
        return qp;
    }

    @Override
    public void post() {
        post(wrId);
    }

    @Override
    public void post(long wrId) {
        first.wrId = wrId;
        qp.postSend(first);
    }
}
