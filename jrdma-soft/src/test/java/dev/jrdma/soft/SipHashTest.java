package dev.jrdma.soft;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.junit.jupiter.api.Test;

/** {@link SipHash} against the reference vectors of SipHash-2-4 (the paper's implementation, {@code vectors.h}). */
class SipHashTest {
    /** Key 00..0f; vector i is the hash of the message 00..(i-1), its 8 bytes little-endian. */
    private static final String[] VECTORS = {
        "310e0edd47db6f72", "fd67dc93c539f874", "5a4fa9d909806c0d", "2d7efbd796666785", "b7877127e09427cf",
                "8da699cd64557618",
        "cee3fe586e46c9cb", "37d1018bf50002ab", "6224939a79f5f593", "b0e4a90bdf82009e", "f3b9dd94c5bb5d7a",
                "a7ad6b22462fb3f4",
        "fbe50e86bc8f1e75", "903d84c02756ea14", "eef27a8e90ca23f7", "e545be4961ca29a1", "db9bc2577fcc2a3f",
                "9447be2cf5e99a69",
        "9cd38d96f0b3c14b", "bd6179a71dc96dbb", "98eea21af25cd6be", "c7673b2eb0cbf2d0", "883ea3e395675393",
                "c8ce5ccd8c030ca8",
        "94af49f6c650adb8", "eab8858ade92e1bc", "f315bb5bb835d817", "adcf6b0763612e2f", "a5c91da7acaa4dde",
                "716595876650a2a6",
        "28ef495c53a387ad", "42c341d8fa92d832", "ce7cf2722f512771", "e37859f94623f3a7", "381205bb1ab0e012",
                "ae97a10fd434e015",
        "b4a31508beff4d31", "81396229f0907902", "4d0cf49ee5d4dcca", "5c73336a76d8bf9a", "d0a704536ba93e0e",
                "925958fcd6420cad",
        "a915c29bc8067318", "952b79f3bc0aa6d4", "f21df2e41d4535f9", "87577519048f53a9", "10a56cf5dfcd9adb",
                "eb75095ccd986cd0",
        "51a9cb9ecba312e6", "96afadfc2ce666c7", "72fe52975a4364ee", "5a1645b276d592a1", "b274cb8ebf87870a",
                "6f9bb4203de7b381",
        "eaecb2a30b22a87f", "9924a43cc1315724", "bd838d3aafbf8db7", "0b1a2a3265d51aea", "135079a3231ce660",
                "932b2846e4d70666",
        "e1915f5cb1eca46c", "f325965ca16d629f", "575ff28e60381be5", "724506eb4c328a95",
    };

    private static final long K0 = 0x0706050403020100L, K1 = 0x0f0e0d0c0b0a0908L;

    private static long expected(int i) {
        return ByteBuffer.wrap(java.util.HexFormat.of().parseHex(VECTORS[i]))
                .order(ByteOrder.LITTLE_ENDIAN)
                .getLong();
    }

    @Test
    void theReferenceVectorsInHeapAndDirectBuffersAtAnyOffset() {
        assertEquals(64, VECTORS.length);
        for (int i = 0; i < 64; i++) {
            for (int off : new int[] {0, 3}) {
                ByteBuffer heap = ByteBuffer.allocate(off + i), direct = ByteBuffer.allocateDirect(off + i);
                for (int j = 0; j < i; j++) {
                    heap.put(off + j, (byte) j);
                    direct.put(off + j, (byte) j);
                }
                assertEquals(expected(i), SipHash.hash(K0, K1, heap, off, i), "vector " + i + " at offset " + off);
                assertEquals(
                        expected(i),
                        SipHash.hash(K0, K1, direct, off, i),
                        "vector " + i + " (direct) at offset " + off);
            }
        }
        // the paper's own example: the 15-byte message 00..0e hashes to a129ca6149be45e5
        ByteBuffer m = ByteBuffer.allocate(15);
        for (int j = 0; j < 15; j++) m.put(j, (byte) j);
        assertEquals(0xa129ca6149be45e5L, SipHash.hash(K0, K1, m, 0, 15));
    }

    @Test
    void theThreeWordPrefixIsTheHashOfTheWordsFollowedByTheBytes() {
        java.util.Random r = new java.util.Random(7);
        for (int len = 0; len < 40; len++) {
            long w0 = r.nextLong(), w1 = r.nextLong(), w2 = r.nextLong();
            ByteBuffer tail = ByteBuffer.allocate(len),
                    whole = ByteBuffer.allocate(24 + len).order(ByteOrder.LITTLE_ENDIAN);
            whole.putLong(0, w0).putLong(8, w1).putLong(16, w2);
            for (int j = 0; j < len; j++) {
                byte v = (byte) r.nextInt();
                tail.put(j, v);
                whole.put(24 + j, v);
            }
            assertEquals(
                    SipHash.hash(K0, K1, whole, 0, 24 + len),
                    SipHash.hash(K0, K1, w0, w1, w2, tail, 0, len),
                    "length " + len);
        }
    }
}
