package dev.jrdma.verbs;

/**
 * Queue capacities ({@code struct ibv_qp_cap}). The provider may round them up; read back what you got from
 * {@link QueuePair#cap()}.
 *
 * @param maxSendWr     the send requests the send queue holds ({@code max_send_wr})
 * @param maxRecvWr     the receive requests the receive queue holds ({@code max_recv_wr}); 0 on an SRQ
 * @param maxSendSge    the scatter/gather entries of one send request ({@code max_send_sge})
 * @param maxRecvSge    the scatter/gather entries of one receive request ({@code max_recv_sge}); 0 on an SRQ
 * @param maxInlineData the bytes a send request with {@link SendFlag#INLINE} may carry ({@code max_inline_data})
 */
public record QpCap(int maxSendWr, int maxRecvWr, int maxSendSge, int maxRecvSge, int maxInlineData) {
    /**
     * Checks the capacities.
     *
     * @throws IllegalArgumentException when one is negative
     */
    public QpCap {
        if (maxSendWr < 0 || maxRecvWr < 0 || maxSendSge < 0 || maxRecvSge < 0 || maxInlineData < 0)
            throw new IllegalArgumentException("queue capacities cannot be negative");
    }
}
