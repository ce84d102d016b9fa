package dev.jrdma.soft;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The two UDP datagrams that bind a slot of a same-host ring to the device that claimed it ({@link ShmLink}).
 *
 * <p>A ring file is writable by every process of its user, so what a slot says about its sender proves nothing. What
 * does: only the device that holds a UDP port receives what is sent to it, and only it can send from it (a process
 * without CAP_NET_RAW cannot forge a source address). So a sender that claimed slot {@code s} of a peer's ring, and
 * wrote there its address, its port, a random nonce and the position it starts at, sends a HELLO from its own port to
 * the peer's. The peer takes cells from that slot only when a HELLO came from exactly the address and port the slot
 * names, with the slot's nonce; from then on it takes that address as the sender of every cell of the slot (a cell
 * cannot claim another). It answers with an ACK from its own port: the sender's proof that the file it mapped is the
 * ring of the device that holds the peer's port, not one that another process made under that name (no ACK: it sends
 * over UDP, and nothing of its traffic goes through the other file).
 *
 * <p>Layout, big-endian, {@value #BYTES} bytes: magic (8), kind (4: 1 HELLO, 2 ACK), slot (4), nonce (8), start (8).
 * Not a RoCEv2 packet: a device without rings counts one as malformed.
 */
final class ShmProof {
    static final int BYTES = 32;
    static final long MAGIC = 0x4A52_444D_4150_5246L; // "JRDMAPRF"
    static final int HELLO = 1, ACK = 2;

    private static final ValueLayout.OfLong LONG_BE = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfInt INT_BE = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    final int kind, slot;
    final long nonce, start;

    private ShmProof(int kind, int slot, long nonce, long start) {
        this.kind = kind;
        this.slot = slot;
        this.nonce = nonce;
        this.start = start;
    }

    /** A new direct buffer holding the datagram (made rarely: once per claim, a few resends, once per HELLO answered). */
    static ByteBuffer encode(int kind, int slot, long nonce, long start) {
        ByteBuffer b = ByteBuffer.allocateDirect(BYTES).order(ByteOrder.BIG_ENDIAN);
        b.putLong(MAGIC).putInt(kind).putInt(slot).putLong(nonce).putLong(start).flip();
        return b;
    }

    /** Whether the {@code len} bytes at {@code at} of {@code seg} are a proof datagram (a cheap look: length, then magic). */
    static boolean is(MemorySegment seg, long at, int len) {
        return len == BYTES && seg.get(LONG_BE, at) == MAGIC;
    }

    /** The datagram at {@code at} (checked with {@link #is}); null when its kind is neither HELLO nor ACK. */
    static ShmProof decode(MemorySegment seg, long at) {
        int kind = seg.get(INT_BE, at + 8);
        if (kind != HELLO && kind != ACK) return null;
        return new ShmProof(kind, seg.get(INT_BE, at + 12), seg.get(LONG_BE, at + 16), seg.get(LONG_BE, at + 24));
    }
}
