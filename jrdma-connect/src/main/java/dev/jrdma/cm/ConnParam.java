package dev.jrdma.cm;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * {@code struct rdma_conn_param}: what {@link CmId#connect} and {@link CmId#accept} send. jrdma creates its QPs
 * with the verbs API, not through rdma_cm, so {@link #qpNum} must name the QP the connection is for.
 * The defaults are rping's: one read in flight each way, 7 retries, 7 RNR retries.
 */
public final class ConnParam {
    /** The most private data the u8 length field can describe; the CM messages carry less (see {@link #privateData}). */
    public static final int MAX_PRIVATE_DATA = 255;

    private byte[] privateData = new byte[0];
    private int responderResources = 1, initiatorDepth = 1, retryCount = 7, rnrRetryCount = 7, qpNum;
    private boolean flowControl = true, srq;

    /** Parameters with rping's defaults: private data empty, depths 1, retry counts 7, flow control on, QP number 0. */
    public ConnParam() {}

    /**
     * The private data the peer receives with the event. The IB CM carries at most 56 bytes in a connect (REQ),
     * 196 in an accept (REP), 148 in a reject, 180 in a UD connect (SIDR REQ), 136 in a UD accept; librdmacm
     * refuses more with EINVAL.
     *
     * @param data the bytes (copied), may be empty
     * @return this
     * @throws IllegalArgumentException when {@code data} is longer than {@link #MAX_PRIVATE_DATA}
     */
    public ConnParam privateData(byte[] data) {
        if (data.length > MAX_PRIVATE_DATA)
            throw new IllegalArgumentException(
                    "private data of " + data.length + " bytes: at most " + MAX_PRIVATE_DATA);
        privateData = data.clone();
        return this;
    }

    /**
     * How many RDMA reads/atomics this side accepts in flight from the peer ({@code responder_resources}; the QP's
     * {@code max_dest_rd_atomic}).
     *
     * @param n 0..255; the peer's initiator depth should not exceed it
     * @return this
     * @throws IllegalArgumentException when {@code n} is out of range
     */
    public ConnParam responderResources(int n) {
        responderResources = u8("responderResources", n);
        return this;
    }

    /**
     * How many RDMA reads/atomics this side sends in flight ({@code initiator_depth}; the QP's {@code max_rd_atomic}).
     *
     * @param n 0..255
     * @return this
     * @throws IllegalArgumentException when {@code n} is out of range
     */
    public ConnParam initiatorDepth(int n) {
        initiatorDepth = u8("initiatorDepth", n);
        return this;
    }

    /**
     * Whether this side's hardware does end-to-end flow control ({@code flow_control}; always true for rxe).
     *
     * @param b the flag (default true)
     * @return this
     */
    public ConnParam flowControl(boolean b) {
        flowControl = b;
        return this;
    }

    /**
     * Transport retries before a work request fails with RETRY_EXC_ERR ({@code retry_count}; the QP's
     * {@code retry_cnt}).
     *
     * @param n 0..7
     * @return this
     * @throws IllegalArgumentException when {@code n} is out of range
     */
    public ConnParam retryCount(int n) {
        retryCount = bits3("retryCount", n);
        return this;
    }

    /**
     * RNR retries before a work request fails with RNR_RETRY_EXC_ERR ({@code rnr_retry_count}; the QP's
     * {@code rnr_retry}).
     *
     * @param n 0..7; 7 retries forever
     * @return this
     * @throws IllegalArgumentException when {@code n} is out of range
     */
    public ConnParam rnrRetryCount(int n) {
        rnrRetryCount = bits3("rnrRetryCount", n);
        return this;
    }

    /**
     * Whether the QP receives from a shared receive queue ({@code srq}).
     *
     * @param b the flag (default false)
     * @return this
     */
    public ConnParam srq(boolean b) {
        srq = b;
        return this;
    }

    /**
     * The number of the QP this connection is for ({@code qp_num}): jrdma creates QPs with the verbs API, so this
     * must be set.
     *
     * @param qpn the QP number; only its low 24 bits are kept
     * @return this
     */
    public ConnParam qpNum(int qpn) {
        qpNum = qpn & 0xFFFFFF;
        return this;
    }

    /** {@return a copy of the private data (empty when none)} */
    public byte[] privateData() {
        return privateData.clone();
    }
    /** {@return the responder resources, 0..255} */
    public int responderResources() {
        return responderResources;
    }
    /** {@return the initiator depth, 0..255} */
    public int initiatorDepth() {
        return initiatorDepth;
    }
    /** {@return whether end-to-end flow control is announced} */
    public boolean flowControl() {
        return flowControl;
    }
    /** {@return the transport retry count, 0..7} */
    public int retryCount() {
        return retryCount;
    }
    /** {@return the RNR retry count, 0..7 (7: forever)} */
    public int rnrRetryCount() {
        return rnrRetryCount;
    }
    /** {@return whether the QP receives from a shared receive queue} */
    public boolean srq() {
        return srq;
    }
    /** {@return the QP number (24 bits)} */
    public int qpNum() {
        return qpNum;
    }

    /** The C struct, in {@code arena}. */
    MemorySegment toNative(Arena arena) {
        MemorySegment p = arena.allocate(Librdmacm.CP_SIZE, 8);
        if (privateData.length > 0) p.set(ADDRESS, Librdmacm.CP_PRIVATE_DATA, bytes(arena, privateData));
        p.set(JAVA_BYTE, Librdmacm.CP_PRIVATE_DATA_LEN, (byte) privateData.length);
        p.set(JAVA_BYTE, Librdmacm.CP_RESPONDER_RESOURCES, (byte) responderResources);
        p.set(JAVA_BYTE, Librdmacm.CP_INITIATOR_DEPTH, (byte) initiatorDepth);
        p.set(JAVA_BYTE, Librdmacm.CP_FLOW_CONTROL, (byte) (flowControl ? 1 : 0));
        p.set(JAVA_BYTE, Librdmacm.CP_RETRY_COUNT, (byte) retryCount);
        p.set(JAVA_BYTE, Librdmacm.CP_RNR_RETRY_COUNT, (byte) rnrRetryCount);
        p.set(JAVA_BYTE, Librdmacm.CP_SRQ, (byte) (srq ? 1 : 0));
        p.set(JAVA_INT, Librdmacm.CP_QP_NUM, qpNum);
        return p;
    }

    static MemorySegment bytes(Arena arena, byte[] b) {
        MemorySegment d = arena.allocate(Math.max(1, b.length));
        MemorySegment.copy(b, 0, d, JAVA_BYTE, 0, b.length);
        return d;
    }

    private static int u8(String what, int n) {
        if (n < 0 || n > 255) throw new IllegalArgumentException(what + " " + n + " is out of range 0-255");
        return n;
    }

    private static int bits3(String what, int n) {
        if (n < 0 || n > 7) throw new IllegalArgumentException(what + " " + n + " is out of range 0-7");
        return n;
    }

    @Override
    public String toString() {
        return "ConnParam{privateData=" + privateData.length + " B, responderResources=" + responderResources
                + ", initiatorDepth=" + initiatorDepth + ", retryCount=" + retryCount + ", rnrRetryCount="
                + rnrRetryCount + ", srq=" + srq + ", qpNum=" + qpNum + "}";
    }
}
