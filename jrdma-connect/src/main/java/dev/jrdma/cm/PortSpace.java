package dev.jrdma.cm;

/** An rdma_cm port space ({@code enum rdma_port_space}): which QP type the ids carry and how ports are shared. */
public enum PortSpace {
    /** Reliable connected QPs ({@code RDMA_PS_TCP}): connect/accept run the IB CM REQ/REP/RTU exchange. */
    TCP(0x0106),
    /** Unreliable datagram QPs ({@code RDMA_PS_UDP}): connect/accept run SIDR, which hands over a QPN and Q_Key. */
    UDP(0x0111),
    /** {@code RDMA_PS_IPOIB}: UD, sharing IPoIB's port space. */
    IPOIB(0x0002),
    /** {@code RDMA_PS_IB}: any QP type, the IB service ID space. */
    IB(0x013F);

    private final int code;

    PortSpace(int code) {
        this.code = code;
    }

    /** {@return the value of {@code enum rdma_port_space}, e.g. 0x0106 for {@code RDMA_PS_TCP}} */
    public int code() {
        return code;
    }

    /** {@return whether ids of this space carry unreliable datagram QPs ({@link #UDP}, {@link #IPOIB})} */
    public boolean isDatagram() {
        return this == UDP || this == IPOIB;
    }

    /**
     * The port space of a code, e.g. from {@code rdma_cm_id.ps}.
     *
     * @param code an {@code enum rdma_port_space} value
     * @return its port space
     * @throws IllegalArgumentException when the code is not one of the four spaces
     */
    public static PortSpace of(int code) {
        for (PortSpace p : values()) if (p.code == code) return p;
        throw new IllegalArgumentException("unknown rdma_cm port space 0x" + Integer.toHexString(code));
    }
}
