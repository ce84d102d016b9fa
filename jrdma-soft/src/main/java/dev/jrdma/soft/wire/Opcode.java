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
    SEND_FIRST(0x00, Opcode.PAYLOAD | Opcode.REQ | Opcode.SEND | Opcode.START),
    SEND_MIDDLE(0x01, Opcode.PAYLOAD | Opcode.REQ | Opcode.SEND | Opcode.MIDDLE),
    SEND_LAST(0x02, Opcode.PAYLOAD | Opcode.REQ | Opcode.SEND | Opcode.END | Opcode.COMP),
    SEND_LAST_WITH_IMMEDIATE(0x03, Opcode.IMMDT | Opcode.PAYLOAD | Opcode.REQ | Opcode.SEND | Opcode.END | Opcode.COMP),
    SEND_ONLY(0x04, Opcode.PAYLOAD | Opcode.REQ | Opcode.SEND | Opcode.START | Opcode.END | Opcode.COMP),
    SEND_ONLY_WITH_IMMEDIATE(0x05, Opcode.IMMDT | Opcode.PAYLOAD | Opcode.REQ | Opcode.SEND | Opcode.START | Opcode.END | Opcode.COMP),
    RDMA_WRITE_FIRST(0x06, Opcode.RETH | Opcode.PAYLOAD | Opcode.REQ | Opcode.WRITE | Opcode.START),
    RDMA_WRITE_MIDDLE(0x07, Opcode.PAYLOAD | Opcode.REQ | Opcode.WRITE | Opcode.MIDDLE),
    RDMA_WRITE_LAST(0x08, Opcode.PAYLOAD | Opcode.REQ | Opcode.WRITE | Opcode.END),
    RDMA_WRITE_LAST_WITH_IMMEDIATE(0x09, Opcode.IMMDT | Opcode.PAYLOAD | Opcode.REQ | Opcode.WRITE | Opcode.END | Opcode.COMP),
    RDMA_WRITE_ONLY(0x0A, Opcode.RETH | Opcode.PAYLOAD | Opcode.REQ | Opcode.WRITE | Opcode.START | Opcode.END),
    RDMA_WRITE_ONLY_WITH_IMMEDIATE(0x0B, Opcode.RETH | Opcode.IMMDT | Opcode.PAYLOAD | Opcode.REQ | Opcode.WRITE | Opcode.START | Opcode.END | Opcode.COMP),
    RDMA_READ_REQUEST(0x0C, Opcode.RETH | Opcode.REQ | Opcode.READ | Opcode.START | Opcode.END),
    RDMA_READ_RESPONSE_FIRST(0x0D, Opcode.AETH | Opcode.PAYLOAD | Opcode.ACK | Opcode.START),
    RDMA_READ_RESPONSE_MIDDLE(0x0E, Opcode.PAYLOAD | Opcode.ACK | Opcode.MIDDLE),
    RDMA_READ_RESPONSE_LAST(0x0F, Opcode.AETH | Opcode.PAYLOAD | Opcode.ACK | Opcode.END),
    RDMA_READ_RESPONSE_ONLY(0x10, Opcode.AETH | Opcode.PAYLOAD | Opcode.ACK | Opcode.START | Opcode.END),
    ACKNOWLEDGE(0x11, Opcode.AETH | Opcode.ACK | Opcode.START | Opcode.END),
    ATOMIC_ACKNOWLEDGE(0x12, Opcode.AETH | Opcode.ATMACK | Opcode.ACK | Opcode.START | Opcode.END),
    COMPARE_SWAP(0x13, Opcode.ATMETH | Opcode.REQ | Opcode.ATOMIC | Opcode.START | Opcode.END),
    FETCH_ADD(0x14, Opcode.ATMETH | Opcode.REQ | Opcode.ATOMIC | Opcode.START | Opcode.END),
    SEND_LAST_WITH_INVALIDATE(0x16, Opcode.IETH | Opcode.PAYLOAD | Opcode.REQ | Opcode.SEND | Opcode.END | Opcode.COMP),
    SEND_ONLY_WITH_INVALIDATE(0x17, Opcode.IETH | Opcode.PAYLOAD | Opcode.REQ | Opcode.SEND | Opcode.START | Opcode.END | Opcode.COMP),

    // UD (IBA 9.2 Table 38: transport 011 = UD): one packet per message, with a DETH
    UD_SEND_ONLY(0x64, Opcode.DETH | Opcode.PAYLOAD | Opcode.REQ | Opcode.SEND | Opcode.START | Opcode.END | Opcode.COMP),
    UD_SEND_ONLY_WITH_IMMEDIATE(0x65, Opcode.DETH | Opcode.IMMDT | Opcode.PAYLOAD | Opcode.REQ | Opcode.SEND | Opcode.START | Opcode.END | Opcode.COMP);

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

    // ---- header sizes ----------------------------------------------------------------------------
    public static final int BTH_BYTES = 12;
    public static final int RETH_BYTES = 16;
    public static final int AETH_BYTES = 4;
    public static final int ATMETH_BYTES = 28;
    public static final int ATMACK_BYTES = 8;
    public static final int IMMDT_BYTES = 4;
    public static final int IETH_BYTES = 4;
    public static final int ICRC_BYTES = 4;
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
        this.headerLength = len;
    }

    /** The 8-bit BTH opcode value. */
    public int code() { return code; }

    /** The flag bits of this opcode (see the constants of this class). */
    public int flags() { return flags; }

    /** Whether every bit of {@code mask} is set for this opcode. */
    public boolean has(int mask) { return (flags & mask) == mask; }

    /** BTH plus extension headers, in bytes (the payload starts here). */
    public int headerLength() { return headerLength; }

    /** The opcode with this code, or {@code null} when it is not an RC opcode this codec knows. */
    public static Opcode of(int code) { return BY_CODE[code & 0xFF]; }

    /** Flags of an opcode value; 0 when unknown (allocation-free). */
    public static int flags(int code) { return FLAGS[code & 0xFF]; }

    /** Header length (BTH + extension headers) of an opcode value; -1 when unknown. */
    public static int headerLength(int code) { return HDR_LEN[code & 0xFF]; }

    /** Whether the opcode value is a known RC opcode. */
    public static boolean isValid(int code) { return FLAGS[code & 0xFF] != 0; }

    /** Offset of the RETH / AtomicETH / AETH (whichever the opcode has) from the BTH start. */
    public static int firstExtOffset(int code) { return BTH_BYTES; }

    /** Offset of the AtomicAckETH from the BTH start (valid for ATOMIC_ACKNOWLEDGE). */
    public static int atomicAckOffset(int code) { return BTH_BYTES + AETH_BYTES; }

    /** Offset of the ImmDt or IETH from the BTH start (valid when the opcode has one). */
    public static int immOffset(int code) {
        int f = FLAGS[code & 0xFF];
        return (f & RETH) != 0 ? BTH_BYTES + RETH_BYTES : (f & DETH) != 0 ? BTH_BYTES + DETH_BYTES : BTH_BYTES;
    }
}
