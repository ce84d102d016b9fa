package dev.jrdma.verbs;

import java.util.Objects;

/**
 * What a queue pair is created with ({@code struct ibv_qp_init_attr}, for {@link ProtectionDomain#createQueuePair}).
 * Use {@link #builder(CompletionQueue)}.
 *
 * @param type     the transport: RC, UC or UD ({@code qp_type})
 * @param sendCq   where send requests complete ({@code send_cq})
 * @param recvCq   where receive requests complete ({@code recv_cq}); may be {@code sendCq}
 * @param cap      the queue capacities asked for ({@code cap})
 * @param sqSigAll whether every send request completes, whatever its {@link SendFlag#SIGNALED} flag
 *                 ({@code sq_sig_all})
 * @param srq      the shared receive queue the QP takes its receives from, or null for a receive queue of its own
 *                 ({@code srq})
 */
public record QpInitAttr(
        QpType type,
        CompletionQueue sendCq,
        CompletionQueue recvCq,
        QpCap cap,
        boolean sqSigAll,
        SharedReceiveQueue srq) {
    /**
     * Checks that the required parts are present.
     *
     * @throws NullPointerException when {@code type}, {@code sendCq}, {@code recvCq} or {@code cap} is null
     */
    public QpInitAttr {
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(sendCq, "sendCq: a QP needs a send completion queue");
        Objects.requireNonNull(recvCq, "recvCq: a QP needs a receive completion queue");
        Objects.requireNonNull(cap, "cap");
    }

    /**
     * A QP with its own receive queue (no SRQ).
     *
     * @param type     the transport: RC, UC or UD
     * @param sendCq   where send requests complete
     * @param recvCq   where receive requests complete
     * @param cap      the queue capacities asked for
     * @param sqSigAll whether every send request completes, whatever its {@link SendFlag#SIGNALED} flag
     */
    public QpInitAttr(QpType type, CompletionQueue sendCq, CompletionQueue recvCq, QpCap cap, boolean sqSigAll) {
        this(type, sendCq, recvCq, cap, sqSigAll, null);
    }

    /**
     * A builder for an RC QP with both queues completing on {@code cq}, 16 requests and 1 SGE each way, no inline data,
     * no SRQ, and only signaled sends completing.
     *
     * @param cq the completion queue of both the send and the receive queue
     * @return the builder
     */
    public static Builder builder(CompletionQueue cq) {
        return new Builder(cq);
    }

    /**
     * Builds a {@link QpInitAttr}; each setter overrides one default of {@link QpInitAttr#builder(CompletionQueue)}.
     */
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

        /**
         * The transport ({@code qp_type}).
         *
         * @param t RC (the default), UC or UD
         * @return this
         */
        public Builder type(QpType t) {
            type = t;
            return this;
        }
        /**
         * The completion queue of the send queue ({@code send_cq}).
         *
         * @param cq the CQ
         * @return this
         */
        public Builder sendCq(CompletionQueue cq) {
            sendCq = cq;
            return this;
        }
        /**
         * The completion queue of the receive queue ({@code recv_cq}).
         *
         * @param cq the CQ
         * @return this
         */
        public Builder recvCq(CompletionQueue cq) {
            recvCq = cq;
            return this;
        }
        /**
         * The send requests the send queue must hold ({@code max_send_wr}).
         *
         * @param n at least 0; the default is 16
         * @return this
         */
        public Builder maxSendWr(int n) {
            maxSendWr = n;
            return this;
        }
        /**
         * The receive requests the receive queue must hold ({@code max_recv_wr}); ignored with an SRQ.
         *
         * @param n at least 0; the default is 16
         * @return this
         */
        public Builder maxRecvWr(int n) {
            maxRecvWr = n;
            return this;
        }
        /**
         * The scatter/gather entries of one send request ({@code max_send_sge}).
         *
         * @param n at least 0; the default is 1
         * @return this
         */
        public Builder maxSendSge(int n) {
            maxSendSge = n;
            return this;
        }
        /**
         * The scatter/gather entries of one receive request ({@code max_recv_sge}); ignored with an SRQ.
         *
         * @param n at least 0; the default is 1
         * @return this
         */
        public Builder maxRecvSge(int n) {
            maxRecvSge = n;
            return this;
        }
        /**
         * The bytes a send with {@link SendFlag#INLINE} may carry ({@code max_inline_data}).
         *
         * @param n at least 0; the default is 0 (no inline sends)
         * @return this
         */
        public Builder maxInlineData(int n) {
            maxInlineData = n;
            return this;
        }
        /**
         * Whether every send request completes, whatever its {@link SendFlag#SIGNALED} flag ({@code sq_sig_all}).
         *
         * @param b true for a completion per send; the default is false
         * @return this
         */
        public Builder sqSigAll(boolean b) {
            sqSigAll = b;
            return this;
        }

        /**
         * Receives come from this shared receive queue (of the same PD); the QP gets no receive queue of its own.
         *
         * @param s the SRQ, or null (the default) for a receive queue of its own
         * @return this
         */
        public Builder srq(SharedReceiveQueue s) {
            srq = s;
            return this;
        }

        /**
         * {@return the attributes; with an SRQ the receive capacities are 0, as libibverbs ignores them then}
         *
         * @throws IllegalArgumentException when a capacity is negative
         * @throws NullPointerException when a completion queue or the type is null
         */
        public QpInitAttr build() {
            // on an SRQ the QP's own receive queue is empty: libibverbs ignores max_recv_wr/sge then
            return new QpInitAttr(
                    type,
                    sendCq,
                    recvCq,
                    new QpCap(
                            maxSendWr,
                            srq == null ? maxRecvWr : 0,
                            maxSendSge,
                            srq == null ? maxRecvSge : 0,
                            maxInlineData),
                    sqSigAll,
                    srq);
        }
    }
}
