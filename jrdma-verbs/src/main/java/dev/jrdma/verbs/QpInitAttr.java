package dev.jrdma.verbs;

import java.util.Objects;

/** What a queue pair is created with ({@code struct ibv_qp_init_attr}). Use {@link #builder(CompletionQueue)}. */
public record QpInitAttr(QpType type, CompletionQueue sendCq, CompletionQueue recvCq, QpCap cap, boolean sqSigAll,
                         SharedReceiveQueue srq) {
    public QpInitAttr {
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(sendCq, "sendCq: a QP needs a send completion queue");
        Objects.requireNonNull(recvCq, "recvCq: a QP needs a receive completion queue");
        Objects.requireNonNull(cap, "cap");
    }

    /** A QP with its own receive queue. */
    public QpInitAttr(QpType type, CompletionQueue sendCq, CompletionQueue recvCq, QpCap cap, boolean sqSigAll) {
        this(type, sendCq, recvCq, cap, sqSigAll, null);
    }

    /** An RC QP with both queues completing on {@code cq}, 16 WRs and 1 SGE each way, no inline data. */
    public static Builder builder(CompletionQueue cq) {
        return new Builder(cq);
    }

    public static final class Builder {
        private QpType type = QpType.RC;
        private CompletionQueue sendCq, recvCq;
        private int maxSendWr = 16, maxRecvWr = 16, maxSendSge = 1, maxRecvSge = 1, maxInlineData = 0;
        private boolean sqSigAll;
        private SharedReceiveQueue srq;

        private Builder(CompletionQueue cq) {
            sendCq = cq;
            recvCq = cq;
        }

        public Builder type(QpType t) { type = t; return this; }
        public Builder sendCq(CompletionQueue cq) { sendCq = cq; return this; }
        public Builder recvCq(CompletionQueue cq) { recvCq = cq; return this; }
        public Builder maxSendWr(int n) { maxSendWr = n; return this; }
        public Builder maxRecvWr(int n) { maxRecvWr = n; return this; }
        public Builder maxSendSge(int n) { maxSendSge = n; return this; }
        public Builder maxRecvSge(int n) { maxRecvSge = n; return this; }
        public Builder maxInlineData(int n) { maxInlineData = n; return this; }
        /** Every send WR completes, whatever its SIGNALED flag says. */
        public Builder sqSigAll(boolean b) { sqSigAll = b; return this; }

        /** Receives come from this shared receive queue (of the same PD); the QP gets no receive queue of its own. */
        public Builder srq(SharedReceiveQueue s) { srq = s; return this; }

        public QpInitAttr build() {
            // on an SRQ the QP's own receive queue is empty: libibverbs ignores max_recv_wr/sge then
            return new QpInitAttr(type, sendCq, recvCq, new QpCap(maxSendWr, srq == null ? maxRecvWr : 0, maxSendSge,
                    srq == null ? maxRecvSge : 0, maxInlineData), sqSigAll, srq);
        }
    }
}
