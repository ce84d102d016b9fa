package dev.jrdma.soft;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * SipHash-2-4 (Aumasson and Bernstein, 2012): a keyed PRF with a 128-bit key and a 64-bit output, the MAC of
 * {@link PacketAuth}. Written out here because it needs no state but locals (any thread, no allocation) and reads
 * the packet where it lies, in a heap or direct {@link ByteBuffer}. Checked against the reference vectors of the
 * paper's implementation ({@code SipHashTest}).
 */
final class SipHash {
    private static final VarHandle LE_LONG =
            MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

    private SipHash() {}

    /** {@return SipHash-2-4 under the key {@code k0, k1} (its bytes 0-7 and 8-15, little-endian) of {@code len} bytes of {@code b} from {@code off}} */
    static long hash(long k0, long k1, ByteBuffer b, int off, int len) {
        return hash(k0, k1, 0, 0, 0, 0, b, off, len);
    }

    /**
     * SipHash-2-4 of the message made of the 8-byte little-endian words {@code w0, w1, w2} followed by {@code len}
     * bytes of {@code b} from {@code off} (what binds a packet's MAC to its sender: see {@link PacketAuth}).
     */
    static long hash(long k0, long k1, long w0, long w1, long w2, ByteBuffer b, int off, int len) {
        return hash(k0, k1, 3, w0, w1, w2, b, off, len);
    }

    private static long hash(long k0, long k1, int words, long w0, long w1, long w2, ByteBuffer b, int off, int len) {
        long v0 = 0x736f6d6570736575L ^ k0, v1 = 0x646f72616e646f6dL ^ k1;
        long v2 = 0x6c7967656e657261L ^ k0, v3 = 0x7465646279746573L ^ k1;
        for (int k = 0; k < words; k++) {
            long m = k == 0 ? w0 : k == 1 ? w1 : w2;
            v3 ^= m;
            for (int r = 0; r < 2; r++) {
                v0 += v1;
                v1 = Long.rotateLeft(v1, 13);
                v1 ^= v0;
                v0 = Long.rotateLeft(v0, 32);
                v2 += v3;
                v3 = Long.rotateLeft(v3, 16);
                v3 ^= v2;
                v0 += v3;
                v3 = Long.rotateLeft(v3, 21);
                v3 ^= v0;
                v2 += v1;
                v1 = Long.rotateLeft(v1, 17);
                v1 ^= v2;
                v2 = Long.rotateLeft(v2, 32);
            }
            v0 ^= m;
        }
        int end = off + (len & ~7);
        for (int i = off; i < end; i += 8) { // the hot loop: the packet, 8 bytes a step
            long m = (long) LE_LONG.get(b, i);
            v3 ^= m;
            for (int r = 0; r < 2; r++) {
                v0 += v1;
                v1 = Long.rotateLeft(v1, 13);
                v1 ^= v0;
                v0 = Long.rotateLeft(v0, 32);
                v2 += v3;
                v3 = Long.rotateLeft(v3, 16);
                v3 ^= v2;
                v0 += v3;
                v3 = Long.rotateLeft(v3, 21);
                v3 ^= v0;
                v2 += v1;
                v1 = Long.rotateLeft(v1, 17);
                v1 ^= v2;
                v2 = Long.rotateLeft(v2, 32);
            }
            v0 ^= m;
        }
        long last = (long) (len + 8 * words) << 56;
        for (int i = (len & 7) - 1; i >= 0; i--) last |= (b.get(end + i) & 0xFFL) << (8 * i);
        v3 ^= last;
        for (int r = 0; r < 2; r++) {
            v0 += v1;
            v1 = Long.rotateLeft(v1, 13);
            v1 ^= v0;
            v0 = Long.rotateLeft(v0, 32);
            v2 += v3;
            v3 = Long.rotateLeft(v3, 16);
            v3 ^= v2;
            v0 += v3;
            v3 = Long.rotateLeft(v3, 21);
            v3 ^= v0;
            v2 += v1;
            v1 = Long.rotateLeft(v1, 17);
            v1 ^= v2;
            v2 = Long.rotateLeft(v2, 32);
        }
        v0 ^= last;
        v2 ^= 0xff;
        for (int r = 0; r < 4; r++) {
            v0 += v1;
            v1 = Long.rotateLeft(v1, 13);
            v1 ^= v0;
            v0 = Long.rotateLeft(v0, 32);
            v2 += v3;
            v3 = Long.rotateLeft(v3, 16);
            v3 ^= v2;
            v0 += v3;
            v3 = Long.rotateLeft(v3, 21);
            v3 ^= v0;
            v2 += v1;
            v1 = Long.rotateLeft(v1, 17);
            v1 ^= v2;
            v2 = Long.rotateLeft(v2, 32);
        }
        return v0 ^ v1 ^ v2 ^ v3;
    }
}
