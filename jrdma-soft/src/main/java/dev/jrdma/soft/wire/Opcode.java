package dev.jrdma.soft.wire;

/**
 * The Reliable Connected (RC) transport opcodes of the BTH (IBA vol 1, table 38; transport prefix 000b,
 * so the RC opcodes are 0x00..0x17) and, per opcode, which extension headers follow the BTH and whether
 * a payload follows them.
 *
 * <p>Extension headers follow the BTH in this order: RETH or AtomicETH or AETH, then AtomicAckETH, then
 * ImmDt or IETH, then the payload. The helpers that take an {@code int} opcode ({@link #flags(int)},
 * {@link #headerLength(int)}, ...) are allocation-free and meant for the packet path; unknown opcodes
 * return {@code 0} flags and a header length of {@code -1}.
 */
public enum Opcode {
    /** {@code IB_OPCODE_RC_SEND_FIRST} (0x00): the first packet of a SEND that spans several packets. */
    SEND_FIRST(0x00, Opcode.PAYLOAD | Opcode.REQ | Opcode.SEND | Opcode.START),
    /** {@code IB_OPCODE_RC_SEND_MIDDLE} (0x01): a middle packet of a SEND (a full MTU of payload). */
    SEND_MIDDLE(0x01, Opcode.PAYLOAD | Opcode.REQ | Opcode.SEND | Opcode.MIDDLE),
    /** {@code IB_OPCODE_RC_SEND_LAST} (0x02): the last packet of a SEND; consumes the receive WQE. */
    SEND_LAST(0x02, Opcode.PAYLOAD | Opcode.REQ | Opcode.SEND | Opcode.END | Opcode.COMP),
    /** {@code IB_OPCODE_RC_SEND_LAST_WITH_IMMEDIATE} (0x03): the last packet of a SEND with immediate data (ImmDt). */
    SEND_LAST_WITH_IMMEDIATE(0x03, Opcode.IMMDT | Opcode.PAYLOAD | Opcode.REQ | Opcode.SEND | Opcode.END | Opcode.COMP),
    /** {@code IB_OPCODE_RC_SEND_ONLY} (0x04): a SEND that fits one packet. */
    SEND_ONLY(0x04, Opcode.PAYLOAD | Opcode.REQ | Opcode.SEND | Opcode.START | Opcode.END | Opcode.COMP),
    /** {@code IB_OPCODE_RC_SEND_ONLY_WITH_IMMEDIATE} (0x05): a SEND with immediate data that fits one packet. */
    SEND_ONLY_WITH_IMMEDIATE(
            0x05, Opcode.IMMDT | Opcode.PAYLOAD | Opcode.REQ | Opcode.SEND | Opcode.START | Opcode.END | Opcode.COMP),
    /**
     * {@code IB_OPCODE_RC_RDMA_WRITE_FIRST} (0x06): the first packet of an RDMA WRITE that spans several packets (RETH).
     */
    RDMA_WRITE_FIRST(0x06, Opcode.RETH | Opcode.PAYLOAD | Opcode.REQ | Opcode.WRITE | Opcode.START),
    /** {@code IB_OPCODE_RC_RDMA_WRITE_MIDDLE} (0x07): a middle packet of an RDMA WRITE. */
    RDMA_WRITE_MIDDLE(0x07, Opcode.PAYLOAD | Opcode.REQ | Opcode.WRITE | Opcode.MIDDLE),
    /** {@code IB_OPCODE_RC_RDMA_WRITE_LAST} (0x08): the last packet of an RDMA WRITE. */
    RDMA_WRITE_LAST(0x08, Opcode.PAYLOAD | Opcode.REQ | Opcode.WRITE | Opcode.END),
    /**
     * {@code IB_OPCODE_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE} (0x09): the last packet of an RDMA WRITE with immediate data; consumes a receive WQE.
     */
    RDMA_WRITE_LAST_WITH_IMMEDIATE(
            0x09, Opcode.IMMDT | Opcode.PAYLOAD | Opcode.REQ | Opcode.WRITE | Opcode.END | Opcode.COMP),
    /** {@code IB_OPCODE_RC_RDMA_WRITE_ONLY} (0x0A): an RDMA WRITE that fits one packet (RETH). */
    RDMA_WRITE_ONLY(0x0A, Opcode.RETH | Opcode.PAYLOAD | Opcode.REQ | Opcode.WRITE | Opcode.START | Opcode.END),
    /**
     * {@code IB_OPCODE_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE} (0x0B): an RDMA WRITE with immediate data that fits one packet (RETH, ImmDt); consumes a receive WQE.
     */
    RDMA_WRITE_ONLY_WITH_IMMEDIATE(
            0x0B,
            Opcode.RETH
                    | Opcode.IMMDT
                    | Opcode.PAYLOAD
                    | Opcode.REQ
                    | Opcode.WRITE
                    | Opcode.START
                    | Opcode.END
                    | Opcode.COMP),
    /** {@code IB_OPCODE_RC_RDMA_READ_REQUEST} (0x0C): an RDMA READ request (RETH, no payload). */
    RDMA_READ_REQUEST(0x0C, Opcode.RETH | Opcode.REQ | Opcode.READ | Opcode.START | Opcode.END),
    /**
     * {@code IB_OPCODE_RC_RDMA_READ_RESPONSE_FIRST} (0x0D): the first packet of a READ response of several packets (AETH).
     */
    RDMA_READ_RESPONSE_FIRST(0x0D, Opcode.AETH | Opcode.PAYLOAD | Opcode.ACK | Opcode.START),
    /** {@code IB_OPCODE_RC_RDMA_READ_RESPONSE_MIDDLE} (0x0E): a middle packet of a READ response. */
    RDMA_READ_RESPONSE_MIDDLE(0x0E, Opcode.PAYLOAD | Opcode.ACK | Opcode.MIDDLE),
    /** {@code IB_OPCODE_RC_RDMA_READ_RESPONSE_LAST} (0x0F): the last packet of a READ response (AETH). */
    RDMA_READ_RESPONSE_LAST(0x0F, Opcode.AETH | Opcode.PAYLOAD | Opcode.ACK | Opcode.END),
    /** {@code IB_OPCODE_RC_RDMA_READ_RESPONSE_ONLY} (0x10): a READ response that fits one packet (AETH). */
    RDMA_READ_RESPONSE_ONLY(0x10, Opcode.AETH | Opcode.PAYLOAD | Opcode.ACK | Opcode.START | Opcode.END),
    /** {@code IB_OPCODE_RC_ACKNOWLEDGE} (0x11): an ACK, RNR NAK or NAK (AETH). */
    ACKNOWLEDGE(0x11, Opcode.AETH | Opcode.ACK | Opcode.START | Opcode.END),
    /**
     * {@code IB_OPCODE_RC_ATOMIC_ACKNOWLEDGE} (0x12): the response to an atomic request: AETH and the original value (AtomicAckETH).
     */
    ATOMIC_ACKNOWLEDGE(0x12, Opcode.AETH | Opcode.ATMACK | Opcode.ACK | Opcode.START | Opcode.END),
    /** {@code IB_OPCODE_RC_COMPARE_SWAP} (0x13): an atomic compare-and-swap request (AtomicETH). */
    COMPARE_SWAP(0x13, Opcode.ATMETH | Opcode.REQ | Opcode.ATOMIC | Opcode.START | Opcode.END),
    /** {@code IB_OPCODE_RC_FETCH_ADD} (0x14): an atomic fetch-and-add request (AtomicETH). */
    FETCH_ADD(0x14, Opcode.ATMETH | Opcode.REQ | Opcode.ATOMIC | Opcode.START | Opcode.END),
    /**
     * {@code IB_OPCODE_RC_SEND_LAST_WITH_INVALIDATE} (0x16): the last packet of a SEND with invalidate (IETH: the R_Key the responder invalidates).
     */
    SEND_LAST_WITH_INVALIDATE(0x16, Opcode.IETH | Opcode.PAYLOAD | Opcode.REQ | Opcode.SEND | Opcode.END | Opcode.COMP),
    /** {@code IB_OPCODE_RC_SEND_ONLY_WITH_INVALIDATE} (0x17): a SEND with invalidate that fits one packet (IETH). */
    SEND_ONLY_WITH_INVALIDATE(
            0x17, Opcode.IETH | Opcode.PAYLOAD | Opcode.REQ | Opcode.SEND | Opcode.START | Opcode.END | Opcode.COMP),

    // UD (IBA 9.2 Table 38: transport 011 = UD): one packet per message, with a DETH
    /** {@code IB_OPCODE_UD_SEND_ONLY} (0x64): a UD datagram (DETH). */
    UD_SEND_ONLY(
            0x64, Opcode.DETH | Opcode.PAYLOAD | Opcode.REQ | Opcode.SEND | Opcode.START | Opcode.END | Opcode.COMP),
    /** {@code IB_OPCODE_UD_SEND_ONLY_WITH_IMMEDIATE} (0x65): a UD datagram with immediate data (DETH, ImmDt). */
    UD_SEND_ONLY_WITH_IMMEDIATE(
            0x65,
            Opcode.DETH
                    | Opcode.IMMDT
                    | Opcode.PAYLOAD
                    | Opcode.REQ
                    | Opcode.SEND
                    | Opcode.START
                    | Opcode.END
                    | Opcode.COMP),

    /**
     * {@code CNP} (0x81, RoCEv2 annex A17.9.3: transport 100): DCQCN's congestion notification, sent back to the QP whose
     * packet arrived CE-marked: a BTH (the B/BECN bit set, PSN 0) and 16 reserved bytes.
     */
    CNP(0x81, Opcode.CNP_RESERVED);

    // ---- flag bits -------------------------------------------------------------------------------
    /** A RETH (16 bytes) follows the BTH. */
    public static final int RETH = 1;
    /** An AETH (4 bytes) follows the BTH. */
    public static final int AETH = 1 << 1;
    /** An AtomicETH (28 bytes) follows the BTH. */
    public static final int ATMETH = 1 << 2;
    /** An AtomicAckETH (8 bytes) follows the AETH. */
    public static final int ATMACK = 1 << 3;
    /** An ImmDt (4 bytes) precedes the payload. */
    public static final int IMMDT = 1 << 4;
    /** An IETH (4 bytes) precedes the payload. */
    public static final int IETH = 1 << 5;
    /** The packet carries a payload (possibly empty). */
    public static final int PAYLOAD = 1 << 6;
    /** A request (requester → responder). */
    public static final int REQ = 1 << 7;
    /** A response (responder → requester). */
    public static final int ACK = 1 << 8;
    /** Part of a SEND message. */
    public static final int SEND = 1 << 9;
    /** Part of an RDMA WRITE message. */
    public static final int WRITE = 1 << 10;
    /** An RDMA READ request. */
    public static final int READ = 1 << 11;
    /** An atomic request. */
    public static final int ATOMIC = 1 << 12;
    /** First packet of a message (FIRST or ONLY). */
    public static final int START = 1 << 13;
    /** Middle packet of a message. */
    public static final int MIDDLE = 1 << 14;
    /** Last packet of a message (LAST or ONLY). */
    public static final int END = 1 << 15;
    /** The last packet of a request that consumes a receive WQE at the responder. */
    public static final int COMP = 1 << 16;
    /** A DETH (8 bytes: Q_Key, source QP) follows the BTH: the datagram transports. */
    public static final int DETH = 1 << 17;
    /** The CNP's 16 reserved bytes follow the BTH. */
    public static final int CNP_RESERVED = 1 << 18;

    // ---- header sizes ----------------------------------------------------------------------------
    /** Bytes of the BTH. */
    public static final int BTH_BYTES = 12;
    /** Bytes of a RETH. */
    public static final int RETH_BYTES = 16;
    /** Bytes of an AETH. */
    public static final int AETH_BYTES = 4;
    /** Bytes of an AtomicETH. */
    public static final int ATMETH_BYTES = 28;
    /** Bytes of an AtomicAckETH. */
    public static final int ATMACK_BYTES = 8;
    /** Bytes of an ImmDt. */
    public static final int IMMDT_BYTES = 4;
    /** Bytes of an IETH. */
    public static final int IETH_BYTES = 4;
    /** Bytes of the ICRC that ends every packet. */
    public static final int ICRC_BYTES = 4;
    /** A CNP's 16 reserved bytes after the BTH. */
    public static final int CNP_RESERVED_BYTES = 16;
    /** Bytes of a DETH. */
    public static final int DETH_BYTES = 8;

    private static final Opcode[] BY_CODE = new Opcode[256];
    private static final int[] FLAGS = new int[256];
    private static final int[] HDR_LEN = new int[256];

    static {
        java.util.Arrays.fill(HDR_LEN, -1);
        for (Opcode op : values()) {
            BY_CODE[op.code] = op;
            FLAGS[op.code] = op.flags;
            HDR_LEN[op.code] = op.headerLength;
        }
    }

    private final int code;
    private final int flags;
    private final int headerLength;

    Opcode(int code, int flags) {
        this.code = code;
        this.flags = flags;
        int len = BTH_BYTES;
        if ((flags & RETH) != 0) len += RETH_BYTES;
        if ((flags & AETH) != 0) len += AETH_BYTES;
        if ((flags & ATMETH) != 0) len += ATMETH_BYTES;
        if ((flags & ATMACK) != 0) len += ATMACK_BYTES;
        if ((flags & DETH) != 0) len += DETH_BYTES;
        if ((flags & IMMDT) != 0) len += IMMDT_BYTES;
        if ((flags & IETH) != 0) len += IETH_BYTES;
        if ((flags & CNP_RESERVED) != 0) len += CNP_RESERVED_BYTES;
        this.headerLength = len;
    }

    /** {@return the 8-bit BTH opcode value} */
    public int code() {
        return code;
    }

    /** {@return the flag bits of this opcode (the {@code int} constants of this class)} */
    public int flags() {
        return flags;
    }

    /**
     * {@return whether every bit of {@code mask} is set for this opcode}
     *
     * @param mask flag bits ORed together
     */
    public boolean has(int mask) {
        return (flags & mask) == mask;
    }

    /** {@return the BTH plus extension headers, in bytes: where the payload starts} */
    public int headerLength() {
        return headerLength;
    }

    /**
     * {@return the opcode with this code, or {@code null} when it is not one this codec knows}
     *
     * @param code an 8-bit BTH opcode value (only its low 8 bits are used)
     */
    public static Opcode of(int code) {
        return BY_CODE[code & 0xFF];
    }

    /**
     * {@return the flags of an opcode value; 0 when unknown (allocation-free)}
     *
     * @param code an 8-bit BTH opcode value (only its low 8 bits are used)
     */
    public static int flags(int code) {
        return FLAGS[code & 0xFF];
    }

    /**
     * {@return the header length (BTH and extension headers) of an opcode value, in bytes; -1 when unknown}
     *
     * @param code an 8-bit BTH opcode value (only its low 8 bits are used)
     */
    public static int headerLength(int code) {
        return HDR_LEN[code & 0xFF];
    }

    /**
     * {@return whether the opcode value is one this codec knows}
     *
     * @param code an 8-bit BTH opcode value (only its low 8 bits are used)
     */
    public static boolean isValid(int code) {
        return FLAGS[code & 0xFF] != 0;
    }

    /**
     * {@return whether the opcode value is a Reliable Connection one (IBA 9.2: its top 3 bits, the transport, are 000)}
     *
     * @param code an 8-bit BTH opcode value (only its low 8 bits are used)
     */
    public static boolean isRc(int code) {
        return (code & 0xE0) == 0;
    }

    /**
     * {@return the offset of the RETH, AtomicETH, AETH or DETH (whichever the opcode has) from the BTH's start: right
     * after the BTH}
     *
     * @param code an 8-bit BTH opcode value (only its low 8 bits are used)
     */
    public static int firstExtOffset(int code) {
        return BTH_BYTES;
    }

    /**
     * {@return the offset of the AtomicAckETH from the BTH's start (valid for ATOMIC_ACKNOWLEDGE): after the AETH}
     *
     * @param code an 8-bit BTH opcode value (only its low 8 bits are used)
     */
    public static int atomicAckOffset(int code) {
        return BTH_BYTES + AETH_BYTES;
    }

    /**
     * {@return the offset of the ImmDt or IETH from the BTH's start (valid when the opcode has one): after a RETH or
     * DETH when it has one}
     *
     * @param code an 8-bit BTH opcode value (only its low 8 bits are used)
     */
    public static int immOffset(int code) {
        int f = FLAGS[code & 0xFF];
        return (f & RETH) != 0 ? BTH_BYTES + RETH_BYTES : (f & DETH) != 0 ? BTH_BYTES + DETH_BYTES : BTH_BYTES;
    }
}
