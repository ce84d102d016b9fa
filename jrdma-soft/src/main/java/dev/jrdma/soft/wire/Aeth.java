package dev.jrdma.soft.wire;

import java.nio.ByteBuffer;

/**
 * ACK Extended Transport Header (4 bytes): syndrome (8 bits) and MSN (24 bits), IBA vol 1 §9.3.5.
 *
 * <p>Syndrome: bit 7 reserved (0); bits 6..5 type: {@code 00} ACK, {@code 01} RNR NAK, {@code 10} reserved,
 * {@code 11} NAK; bits 4..0 value: the credit count of an ACK, the RNR timer code of an RNR NAK, or the NAK
 * code of a NAK.
 */
public final class Aeth {
    /** The AETH's size in bytes. */
    public static final int BYTES = 4;

    /** Syndrome type 00: an ACK; the value is a credit count. */
    public static final int TYPE_ACK = 0;
    /** Syndrome type 01: a receiver-not-ready NAK; the value is an RNR timer code. */
    public static final int TYPE_RNR_NAK = 1;
    /** Syndrome type 10: reserved (a packet with it is malformed). */
    public static final int TYPE_RESERVED = 2;
    /** Syndrome type 11: a NAK; the value is one of the {@code NAK_*} codes. */
    public static final int TYPE_NAK = 3;

    /** NAK code 0, PSN sequence error: the responder expected an earlier PSN; the requester goes back to it. */
    public static final int NAK_PSN_SEQUENCE_ERROR = 0;
    /** NAK code 1, invalid request: completes the request with REM_INV_REQ_ERR. */
    public static final int NAK_INVALID_REQUEST = 1;
    /** NAK code 2, remote access error (rkey, bounds or rights): completes with REM_ACCESS_ERR. */
    public static final int NAK_REMOTE_ACCESS_ERROR = 2;
    /** NAK code 3, remote operational error: completes with REM_OP_ERR. */
    public static final int NAK_REMOTE_OPERATIONAL_ERROR = 3;
    /** NAK code 4, invalid RD request (Reliable Datagram only; never sent here). */
    public static final int NAK_INVALID_RD_REQUEST = 4;

    /** Credit count value meaning "no valid credit count" (end-to-end flow control not used). */
    public static final int CREDITS_INVALID = 0x1F;

    private Aeth() {}

    /**
     * {@return the syndrome byte (type and value; see {@link #type} and {@link #value})}
     *
     * @param b the packet buffer (big-endian)
     * @param off the AETH's absolute offset in {@code b}
     */
    public static int syndrome(ByteBuffer b, int off) {
        return b.get(off) & 0xFF;
    }
    /**
     * {@return the message sequence number, 24 bits: messages the responder completed}
     *
     * @param b the packet buffer (big-endian)
     * @param off the AETH's absolute offset in {@code b}
     */
    public static int msn(ByteBuffer b, int off) {
        return b.getInt(off) & 0xFFFFFF;
    }

    /**
     * Writes an AETH.
     *
     * @param b the packet buffer (big-endian)
     * @param off the AETH's absolute offset in {@code b}
     * @param syndrome the syndrome byte, e.g. from {@link #ackSyndrome}
     * @param msn the message sequence number (24 bits kept)
     */
    public static void write(ByteBuffer b, int off, int syndrome, int msn) {
        b.putInt(off, ((syndrome & 0xFF) << 24) | (msn & 0xFFFFFF));
    }

    /**
     * {@return the syndrome's type (bits 6..5): {@link #TYPE_ACK}, {@link #TYPE_RNR_NAK}, {@link #TYPE_RESERVED} or
     * {@link #TYPE_NAK}}
     *
     * @param syndrome the syndrome byte
     */
    public static int type(int syndrome) {
        return (syndrome >>> 5) & 0x3;
    }
    /**
     * {@return the syndrome's value (bits 4..0): a credit count, an RNR timer code or a NAK code}
     *
     * @param syndrome the syndrome byte
     */
    public static int value(int syndrome) {
        return syndrome & 0x1F;
    }

    /**
     * {@return the syndrome of an ACK}
     *
     * @param credits the credit count, 0..30, or {@link #CREDITS_INVALID}
     */
    public static int ackSyndrome(int credits) {
        return credits & 0x1F;
    }
    /**
     * {@return the syndrome of an RNR NAK}
     *
     * @param timerCode the RNR timer code, 0..31 (see {@link #rnrTimerMicros})
     */
    public static int rnrNakSyndrome(int timerCode) {
        return 0x20 | (timerCode & 0x1F);
    }
    /**
     * {@return the syndrome of a NAK}
     *
     * @param nakCode one of the {@code NAK_*} codes
     */
    public static int nakSyndrome(int nakCode) {
        return 0x60 | (nakCode & 0x1F);
    }

    /**
     * The RNR NAK timer codes (IBA vol 1 table 45) in microseconds: code 0 is 655.36 ms, codes 1..31 run
     * from 0.01 ms to 491.52 ms.
     */
    private static final int[] RNR_TIMER_MICROS = {
        655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920, 2560, 3840, 5120, 7680, 10_240,
        15_360, 20_480, 30_720, 40_960, 61_440, 81_920, 122_880, 163_840, 245_760, 327_680, 491_520,
    };

    /**
     * {@return the microseconds an RNR timer code stands for (IBA vol 1 table 45: code 0 is 655.36 ms, codes 1..31 run
     * from 10 us to 491.52 ms)}
     *
     * @param code the timer code, 0..31 (5 bits kept)
     */
    public static int rnrTimerMicros(int code) {
        return RNR_TIMER_MICROS[code & 0x1F];
    }
}
