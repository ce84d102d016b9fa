package dev.jrdma.verbs;

/** Queue capacities ({@code struct ibv_qp_cap}). The provider may round them up; read back what you got from the QP. */
public record QpCap(int maxSendWr, int maxRecvWr, int maxSendSge, int maxRecvSge, int maxInlineData) {
    public QpCap {
        if (maxSendWr < 0 || maxRecvWr < 0 || maxSendSge < 0 || maxRecvSge < 0 || maxInlineData < 0)
            throw new IllegalArgumentException("queue capacities cannot be negative");
    }
}
