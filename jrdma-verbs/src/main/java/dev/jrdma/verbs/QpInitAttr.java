package dev.jrdma.verbs;

import java.util.Objects;

/** What a queue pair is created with ({@code struct ibv_qp_init_attr}). Use {@link #builder(CompletionQueue)}. */
public record QpInitAttr(QpType type, CompletionQueue sendCq, CompletionQueue recvCq, QpCap cap, boolean sqSigAll) {
    public QpInitAttr {
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(sendCq, "sendCq: a QP needs a send completion queue");
        Objects.requireNonNull(recvCq, "recvCq: a QP needs a receive completion queue");
        Objects.requireNonNull(cap, "cap");
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

        public QpInitAttr build() {
            return new QpInitAttr(type, sendCq, recvCq, new QpCap(maxSendWr, maxRecvWr, maxSendSge, maxRecvSge, maxInlineData), sqSigAll);
        }
    }
}
