package dev.jrdma.soft.wire;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.ByteBuffer;
import java.util.HexFormat;
import java.util.zip.CRC32;
import org.junit.jupiter.api.Test;

class IcrcTest {
    private static final HexFormat HEX = HexFormat.of();
    private static final int IP1 = 0x7F000001, IP2 = 0x7F000002;

    @Test
    void seedIsTheKernelsMaskedLrhState() {
        // rxe starts from the raw CRC state 0xdebb20e3: CRC-32 after 8 bytes of 0xFF (before the final inversion)
        CRC32 c = new CRC32();
        c.update(new byte[] {-1, -1, -1, -1, -1, -1, -1, -1});
        assertEquals(0xdebb20e3L, ~c.getValue() & 0xFFFFFFFFL);
    }

    /**
     * A RoCEv2 CNP captured from a ConnectX-4 Lx (published in scapy's RoCE tests): IPv4 10.0.17.1 →
     * 10.0.18.1, id 0x718c, DF; UDP 0 → 4791; BTH opcode 0x81; 16 bytes of zeros; ICRC bytes 82 fd 00 2a.
     */
    @Test
    void matchesIcrcOfAPacketCapturedFromHardware() {
        ByteBuffer b =
                ByteBuffer.wrap(HEX.parseHex("8100ffff40000118000000000000000000000000000000000000000082fd002a"));
        Icrc icrc = new Icrc();
        int v = icrc.compute(b, 0, b.capacity(), 0x0A001101, 0x0A001201, 0, 4791, 0x718c);
        assertEquals(Icrc.stored(b, 0, b.capacity()), v);
        assertEquals(0x2a00fd82, v); // stored least significant byte first
    }

    /** scapy's UC SEND_ONLY example (id 1144, DF, 192.168.0.7 both ways, 49152 → 4791): ICRC bytes 78 f3 53 f3. */
    @Test
    void matchesScapysUcSendOnlyExample() {
        ByteBuffer b = ByteBuffer.allocate(12 + 20 + 4);
        Bth.write(b, 0, 0x24, false, true, 2, 0xFFFF, 211, false, 13571856);
        b.put(12, "F0".getBytes(java.nio.charset.StandardCharsets.ISO_8859_1));
        b.put(14, HEX.parseHex("818be28935d90e9a955054" + "01be885e50" + "0000"));
        int ip = 0xC0A80007;
        int v = new Icrc().compute(b, 0, b.capacity(), ip, ip, 49152, 4791, 1144);
        ByteBuffer out = ByteBuffer.allocate(4);
        out.putInt(0, Integer.reverseBytes(v));
        assertEquals("78f353f3", HEX.formatHex(out.array()));
    }

    private static ByteBuffer samplePacket(ByteBuffer b, int off, Icrc icrc) {
        int len = RocePacket.writeBth(b, off, Opcode.RDMA_WRITE_ONLY.code(), false, 0xFFFF, 0x11, true, 0x123456, 37);
        Reth.write(b, off + 12, 0xCAFE0000L, 0x1234, 37);
        for (int i = 0; i < 37; i++) b.put(off + 28 + i, (byte) (i * 7));
        icrc.generate(b, off, len, IP1, IP2, 4791, 4791);
        b.limit(off + len);
        return b;
    }

    @Test
    void detectsEveryFlippedBit() {
        Icrc icrc = new Icrc();
        for (ByteBuffer b : new ByteBuffer[] {ByteBuffer.allocate(200), ByteBuffer.allocateDirect(200)}) {
            int off = 5;
            samplePacket(b, off, icrc);
            int len = b.limit() - off;
            assertTrue(icrc.verify(b, off, len, IP1, IP2, 4791, 4791));
            for (int i = 0; i < len; i++) {
                if (i == 4) continue; // resv8a is masked out of the ICRC by design
                for (int bit = 0; bit < 8; bit++) {
                    b.put(off + i, (byte) (b.get(off + i) ^ (1 << bit)));
                    assertFalse(icrc.verify(b, off, len, IP1, IP2, 4791, 4791), "byte " + i + " bit " + bit);
                    b.put(off + i, (byte) (b.get(off + i) ^ (1 << bit)));
                }
            }
            assertTrue(icrc.verify(b, off, len, IP1, IP2, 4791, 4791));
            assertEquals(0, b.position(), "position untouched");
        }
    }

    @Test
    void coversAddressesPortsAndNotResv8a() {
        Icrc icrc = new Icrc();
        ByteBuffer b = samplePacket(ByteBuffer.allocate(128), 0, icrc);
        int len = b.limit();
        assertFalse(icrc.verify(b, 0, len, IP2, IP1, 4791, 4791));
        assertFalse(icrc.verify(b, 0, len, IP1, IP2, 4792, 4791));
        assertFalse(icrc.verify(b, 0, len, IP1, IP2, 4791, 4792));
        assertFalse(icrc.verify(b, 0, len - 4, IP1, IP2, 4791, 4791));
        b.put(4, (byte) 0xC0); // FECN/BECN set by a switch on the way: still valid
        assertTrue(icrc.verify(b, 0, len, IP1, IP2, 4791, 4791));
    }

    @Test
    void matchesAStraightforwardReference() {
        Icrc icrc = new Icrc();
        ByteBuffer b = samplePacket(ByteBuffer.allocate(128), 0, icrc);
        int len = b.limit();
        ByteBuffer ref = ByteBuffer.allocate(8 + 20 + 8 + len - 4);
        for (int i = 0; i < 8; i++) ref.put((byte) 0xFF);
        ref.put((byte) 0x45)
                .put((byte) 0xFF)
                .putShort((short) (28 + len))
                .putShort((short) 0)
                .putShort((short) 0x4000)
                .put((byte) 0xFF)
                .put((byte) 17)
                .putShort((short) 0xFFFF)
                .putInt(IP1)
                .putInt(IP2);
        ref.putShort((short) 4791)
                .putShort((short) 4791)
                .putShort((short) (8 + len))
                .putShort((short) 0xFFFF);
        for (int i = 0; i < len - 4; i++) ref.put(i == 4 ? (byte) 0xFF : b.get(i));
        CRC32 c = new CRC32();
        c.update(ref.array());
        assertEquals((int) c.getValue(), Icrc.stored(b, 0, len));
    }

    /** The hardware packet above carries identification 0x718c: recovered from its ICRC alone, as a UDP receiver must. */
    @Test
    void recoversTheIdentificationOfAPacketCapturedFromHardware() {
        ByteBuffer b =
                ByteBuffer.wrap(HEX.parseHex("8100ffff40000118000000000000000000000000000000000000000082fd002a"));
        assertEquals(0x718c, new Icrc().recoverId(b, 0, b.capacity(), 0x0A001101, 0x0A001201, 0, 4791));
        assertFalse(new Icrc().verify(b, 0, b.capacity(), 0x0A001101, 0x0A001201, 0, 4791), "not right for id 0");
    }

    @Test
    void recoversEveryIdentificationAtManyLengthsAndPatchesForwards() {
        Icrc icrc = new Icrc();
        java.util.Random rnd = new java.util.Random(13);
        for (int payload : new int[] {0, 1, 37, 1023, 1024, 1025, 4096}) {
            ByteBuffer b = ByteBuffer.allocate(12 + 16 + payload + 3 + 4); // pad to 4 bytes
            int len = RocePacket.writeBth(
                    b, 0, Opcode.RDMA_WRITE_ONLY.code(), false, 0xFFFF, 0x11, true, 0x123456, payload);
            for (int i = 28; i < len - 4; i++) b.put(i, (byte) rnd.nextInt());
            for (int n = 0; n < 200; n++) {
                int id = n < 16 ? 1 << n : rnd.nextInt(1 << 16);
                int v = icrc.compute(b, 0, len, IP1, IP2, 4791, 4791, id);
                assertEquals(
                        v, icrc.compute(b, 0, len, IP1, IP2, 4791, 4791) ^ Icrc.idDelta(len, id), "delta of id " + id);
                b.putInt(len - 4, Integer.reverseBytes(v));
                assertEquals(id, icrc.recoverId(b, 0, len, IP1, IP2, 4791, 4791), "payload " + payload + " id " + id);
            }
        }
    }

    @Test
    void aCorruptPacketHasNoIdentification() {
        Icrc icrc = new Icrc();
        ByteBuffer b = samplePacket(ByteBuffer.allocate(200), 0, icrc);
        int len = b.limit();
        assertEquals(0, icrc.recoverId(b, 0, len, IP1, IP2, 4791, 4791));
        int accepted = 0, tried = 0;
        for (int i = 0; i < len; i++) {
            if (i == 4) continue; // resv8a is masked out of the ICRC by design
            for (int bit = 0; bit < 8; bit++) {
                b.put(i, (byte) (b.get(i) ^ (1 << bit)));
                tried++;
                if (icrc.recoverId(b, 0, len, IP1, IP2, 4791, 4791) != Icrc.NO_ID) accepted++;
                b.put(i, (byte) (b.get(i) ^ (1 << bit)));
            }
        }
        // 16 check bits remain: every single-bit error is still caught (a burst of at most 32 bits leaves a
        // difference outside the identification's span: the span's own vectors are bursts at another place)
        assertEquals(0, accepted, accepted + " of " + tried + " single-bit errors accepted");
        assertEquals(Icrc.NO_ID, icrc.recoverId(b, 0, len, IP2, IP1, 4791, 4791), "wrong addresses");
    }

    /**
     * The IPv6 ICRC, recomputed here from a whole IPv6 + UDP header as a receiving RoCE device sees it on the wire
     * (traffic class 0xb8, flow label 0x12345, hop limit 3, a UDP checksum): masked LRH, the IPv6 header with traffic
     * class, flow label and hop limit set to ones, the UDP header with its checksum set to ones, BTH with resv8a set
     * to ones, then the rest. Different traffic class, flow label, hop limit or checksum must not change it; the
     * addresses, ports and payload must.
     */
    @Test
    void ipv6IcrcCoversTheAddressesAndMasksWhatRoutersChange() {
        byte[] src = HEX.parseHex("fd980000000000000000000000000001"),
                dst = HEX.parseHex("fe80000000000000021122fffe334455");
        ByteBuffer pkt = ByteBuffer.allocate(12 + 8 + 4);
        Bth.write(pkt, 0, 0x04, false, false, 0, 0xFFFF, 0x1234, true, 777);
        pkt.put(4, (byte) 0x5a); // resv8a: masked
        for (int i = 0; i < 8; i++) pkt.put(12 + i, (byte) (i * 37 + 1));
        int len = pkt.capacity();
        ByteBuffer wire = ByteBuffer.allocate(40 + 8 + len);
        wire.putInt(0, 6 << 28 | 0xb8 << 20 | 0x12345)
                .putShort(4, (short) (8 + len))
                .put(6, (byte) 17)
                .put(7, (byte) 3);
        wire.put(8, src).put(24, dst);
        wire.putShort(40, (short) 4791)
                .putShort(42, (short) 4791)
                .putShort(44, (short) (8 + len))
                .putShort(46, (short) 0x1d2c);
        wire.put(48, pkt, 0, len);
        byte[] in = new byte[8 + 40 + 8 + len - 4];
        java.util.Arrays.fill(in, 0, 8, (byte) 0xFF);
        wire.get(0, in, 8, 40 + 8 + len - 4);
        in[8] = (byte) (in[8] | 0x0F); // traffic class, high nibble
        in[9] = in[10] = in[11] = (byte) 0xFF; // traffic class low nibble, flow label
        in[8 + 7] = (byte) 0xFF; // hop limit
        in[8 + 40 + 6] = in[8 + 40 + 7] = (byte) 0xFF; // UDP checksum
        in[8 + 48 + 4] = (byte) 0xFF; // resv8a
        CRC32 c = new CRC32();
        c.update(in);
        long sh = ByteBuffer.wrap(src).getLong(0), sl = ByteBuffer.wrap(src).getLong(8);
        long dh = ByteBuffer.wrap(dst).getLong(0), dl = ByteBuffer.wrap(dst).getLong(8);
        Icrc icrc = new Icrc();
        assertEquals((int) c.getValue(), icrc.computeIpv6(pkt, 0, len, sh, sl, dh, dl, 4791, 4791));
        icrc.generateIpv6(pkt, 0, len, sh, sl, dh, dl, 4791, 4791);
        assertTrue(icrc.verifyIpv6(pkt, 0, len, sh, sl, dh, dl, 4791, 4791));
        assertFalse(icrc.verifyIpv6(pkt, 0, len, sh, sl ^ 1, dh, dl, 4791, 4791), "another source address");
        assertFalse(icrc.verifyIpv6(pkt, 0, len, sh, sl, dh, dl, 4792, 4791), "another source port");
        assertFalse(
                icrc.verifyIpv6(pkt, 0, len, sh, sl, dh, dl ^ (1L << 40), 4791, 4791), "another destination address");
        pkt.put(13, (byte) (pkt.get(13) ^ 4));
        assertFalse(icrc.verifyIpv6(pkt, 0, len, sh, sl, dh, dl, 4791, 4791), "a flipped payload bit");
        assertFalse(icrc.verifyIpv6(pkt, 0, 15, sh, sl, dh, dl, 4791, 4791), "shorter than a BTH and an ICRC");
        // an IPv4 ICRC of the same packet differs: the two pseudo headers are not interchangeable
        assertNotEquals(
                icrc.compute(pkt, 0, len, IP1, IP2, 4791, 4791),
                icrc.computeIpv6(pkt, 0, len, 0, 0xFFFF_7F00_0001L, 0, 0xFFFF_7F00_0002L, 4791, 4791));
    }
}
