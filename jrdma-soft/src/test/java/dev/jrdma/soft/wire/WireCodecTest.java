package dev.jrdma.soft.wire;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.ByteBuffer;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;

/** Header encode/decode against byte vectors written by hand from the IBA layouts. */
class WireCodecTest {
    private static final HexFormat HEX = HexFormat.of();

    private static byte[] bytes(ByteBuffer b, int off, int len) {
        byte[] r = new byte[len];
        b.get(off, r);
        return r;
    }

    private static ByteBuffer buf(String hex) {
        return ByteBuffer.wrap(HEX.parseHex(hex.replace(" ", "")));
    }

    @Test
    void bthEncodesExactBytes() {
        for (ByteBuffer b : new ByteBuffer[] {ByteBuffer.allocate(20), ByteBuffer.allocateDirect(20)}) {
            Bth.write(b, 3, 0x04, true, false, 2, 0xFFFF, 0x000011, true, 0x123456);
            assertEquals("04a0ffff0000001180123456", HEX.formatHex(bytes(b, 3, 12)));
        }
    }

    @Test
    void bthDecodesFields() {
        ByteBuffer b = buf("ffff 0a 70 8001 ab 00abcd 80 fedcba");
        int o = 2;
        assertEquals(0x0A, Bth.opcode(b, o));
        assertFalse(Bth.solicitedEvent(b, o));
        assertTrue(Bth.migReq(b, o));
        assertEquals(3, Bth.padCount(b, o));
        assertEquals(0, Bth.tver(b, o));
        assertEquals(0x8001, Bth.pkey(b, o));
        assertEquals(0xAB, Bth.resv8a(b, o));
        assertEquals(0x00ABCD, Bth.destQp(b, o));
        assertTrue(Bth.ackReq(b, o));
        assertEquals(0xFEDCBA, Bth.psn(b, o));
        Bth.setPsn(b, o, 0x000001);
        Bth.setAckReq(b, o, false);
        Bth.setDestQp(b, o, 0xFFFFFF);
        Bth.setPadCount(b, o, 1);
        Bth.setSolicitedEvent(b, o, true);
        assertEquals("0ad08001abffffff00000001", HEX.formatHex(bytes(b, o, 12)));
    }

    @Test
    void bthFieldsDoNotOverflow() {
        ByteBuffer b = ByteBuffer.allocate(12);
        Bth.write(b, 0, 0x11, false, false, 7, 0x1FFFF, 0x7FFFFFFF, false, -1);
        assertEquals(3, Bth.padCount(b, 0));
        assertEquals(0xFFFF, Bth.pkey(b, 0));
        assertEquals(0, Bth.resv8a(b, 0));
        assertEquals(0xFFFFFF, Bth.destQp(b, 0));
        assertFalse(Bth.ackReq(b, 0));
        assertEquals(0xFFFFFF, Bth.psn(b, 0));
    }

    @Test
    void reth() {
        ByteBuffer b = ByteBuffer.allocate(16);
        Reth.write(b, 0, 0x0102030405060708L, 0xA1B2C3D4, 0x1000);
        assertEquals("0102030405060708a1b2c3d400001000", HEX.formatHex(b.array()));
        ByteBuffer d = buf("fffffffffffffff0 00000001 80000000");
        assertEquals(0xFFFFFFFFFFFFFFF0L, Reth.va(d, 0));
        assertEquals(1, Reth.rkey(d, 0));
        assertEquals(0x8000_0000L, Reth.dmaLength(d, 0));
    }

    @Test
    void aethSyndromes() {
        ByteBuffer b = ByteBuffer.allocate(4);
        Aeth.write(b, 0, Aeth.ackSyndrome(Aeth.CREDITS_INVALID), 0x000102);
        assertEquals("1f000102", HEX.formatHex(b.array()));
        assertEquals(0x000102, Aeth.msn(b, 0));
        assertEquals(Aeth.TYPE_ACK, Aeth.type(Aeth.syndrome(b, 0)));
        assertEquals(0x1F, Aeth.value(Aeth.syndrome(b, 0)));

        Aeth.write(b, 0, Aeth.rnrNakSyndrome(14), 0xFFFFFF);
        assertEquals("2effffff", HEX.formatHex(b.array()));
        assertEquals(Aeth.TYPE_RNR_NAK, Aeth.type(Aeth.syndrome(b, 0)));
        assertEquals(14, Aeth.value(Aeth.syndrome(b, 0)));

        assertEquals(0x60, Aeth.nakSyndrome(Aeth.NAK_PSN_SEQUENCE_ERROR));
        assertEquals(0x61, Aeth.nakSyndrome(Aeth.NAK_INVALID_REQUEST));
        assertEquals(0x62, Aeth.nakSyndrome(Aeth.NAK_REMOTE_ACCESS_ERROR));
        assertEquals(0x63, Aeth.nakSyndrome(Aeth.NAK_REMOTE_OPERATIONAL_ERROR));
        assertEquals(0x64, Aeth.nakSyndrome(Aeth.NAK_INVALID_RD_REQUEST));
        ByteBuffer n = buf("62 000007");
        assertEquals(Aeth.TYPE_NAK, Aeth.type(Aeth.syndrome(n, 0)));
        assertEquals(Aeth.NAK_REMOTE_ACCESS_ERROR, Aeth.value(Aeth.syndrome(n, 0)));
        assertEquals(7, Aeth.msn(n, 0));

        assertEquals(655_360, Aeth.rnrTimerMicros(0));
        assertEquals(10, Aeth.rnrTimerMicros(1));
        assertEquals(1280, Aeth.rnrTimerMicros(14));
        assertEquals(491_520, Aeth.rnrTimerMicros(31));
    }

    @Test
    void atomicEthAndAck() {
        ByteBuffer b = ByteBuffer.allocate(28);
        AtomicEth.write(b, 0, 0x1122334455667788L, 0x01020304, 0xAABBCCDDEEFF0011L, 1L);
        assertEquals(
                "1122334455667788" + "01020304" + "aabbccddeeff0011" + "0000000000000001", HEX.formatHex(b.array()));
        assertEquals(0x1122334455667788L, AtomicEth.va(b, 0));
        assertEquals(0x01020304, AtomicEth.rkey(b, 0));
        assertEquals(0xAABBCCDDEEFF0011L, AtomicEth.swapOrAdd(b, 0));
        assertEquals(1L, AtomicEth.compare(b, 0));

        ByteBuffer a = ByteBuffer.allocate(8);
        AtomicAckEth.write(a, 0, 0x8000000000000001L);
        assertEquals("8000000000000001", HEX.formatHex(a.array()));
        assertEquals(0x8000000000000001L, AtomicAckEth.originalData(a, 0));
    }

    @Test
    void immDtAndIeth() {
        ByteBuffer b = ByteBuffer.allocate(8);
        ImmDt.write(b, 0, 0xDEADBEEF);
        Ieth.write(b, 4, 0x12345678);
        assertEquals("deadbeef12345678", HEX.formatHex(b.array()));
        assertEquals(0xDEADBEEF, ImmDt.imm(b, 0));
        assertEquals(0x12345678, Ieth.rkey(b, 4));
    }

    @Test
    void deth() {
        ByteBuffer b = ByteBuffer.allocate(8);
        Deth.write(b, 0, 0x11111111, 0xABCDEF);
        assertEquals("1111111100abcdef", HEX.formatHex(b.array()));
        assertEquals(0x11111111, Deth.qkey(b, 0));
        assertEquals(0xABCDEF, Deth.srcQp(b, 0));
    }

    @Test
    void opcodeTable() {
        int[] codes = {
            0x00,
            0x01,
            0x02,
            0x03,
            0x04,
            0x05,
            0x06,
            0x07,
            0x08,
            0x09,
            0x0A,
            0x0B,
            0x0C,
            0x0D,
            0x0E,
            0x0F,
            0x10,
            0x11,
            0x12,
            0x13,
            0x14,
            0x16,
            0x17,
            0x64,
            0x65,
            0x81 // 0x81: the RoCEv2 CNP
        };
        Opcode[] ops = Opcode.values();
        assertEquals(codes.length, ops.length);
        for (int i = 0; i < codes.length; i++) {
            assertEquals(codes[i], ops[i].code(), ops[i].name());
            assertSame(ops[i], Opcode.of(codes[i]));
        }
        assertNull(Opcode.of(0x15));
        assertNull(Opcode.of(0x18));
        assertEquals(-1, Opcode.headerLength(0x66)); // UD has no other opcode; UC (0x20..) is not implemented
        assertEquals(-1, Opcode.headerLength(0x20));
        assertTrue(Opcode.isValid(0x81)); // the CNP (issue 23 §3): a BTH and 16 reserved bytes
        assertEquals(28, Opcode.headerLength(0x81));
        assertFalse(Opcode.isValid(0x82));
        // the transport is the top 3 bits: RC 000, UC 001, UD 011 (a takeover repeats RC packets only)
        for (Opcode op : ops) assertEquals(op.code() < 0x20, Opcode.isRc(op.code()), op.name());
        assertFalse(Opcode.isRc(0x20));
        assertFalse(Opcode.isRc(0x81));
        // header lengths: BTH 12, +RETH 16, +AETH 4, +AtomicETH 28, +AtomicAckETH 8, +ImmDt/IETH 4
        assertEquals(12, Opcode.SEND_FIRST.headerLength());
        assertEquals(16, Opcode.SEND_ONLY_WITH_IMMEDIATE.headerLength());
        assertEquals(28, Opcode.RDMA_WRITE_FIRST.headerLength());
        assertEquals(12, Opcode.RDMA_WRITE_MIDDLE.headerLength());
        assertEquals(16, Opcode.RDMA_WRITE_LAST_WITH_IMMEDIATE.headerLength());
        assertEquals(32, Opcode.RDMA_WRITE_ONLY_WITH_IMMEDIATE.headerLength());
        // UD: BTH + DETH 8 (+ ImmDt 4), the immediate after the DETH
        assertEquals(20, Opcode.UD_SEND_ONLY.headerLength());
        assertEquals(24, Opcode.UD_SEND_ONLY_WITH_IMMEDIATE.headerLength());
        assertEquals(20, Opcode.immOffset(Opcode.UD_SEND_ONLY_WITH_IMMEDIATE.code()));
        assertEquals(28, Opcode.RDMA_READ_REQUEST.headerLength());
        assertEquals(16, Opcode.RDMA_READ_RESPONSE_FIRST.headerLength());
        assertEquals(12, Opcode.RDMA_READ_RESPONSE_MIDDLE.headerLength());
        assertEquals(16, Opcode.ACKNOWLEDGE.headerLength());
        assertEquals(24, Opcode.ATOMIC_ACKNOWLEDGE.headerLength());
        assertEquals(40, Opcode.COMPARE_SWAP.headerLength());
        assertEquals(40, Opcode.FETCH_ADD.headerLength());
        assertEquals(16, Opcode.SEND_ONLY_WITH_INVALIDATE.headerLength());
        assertEquals(28, Opcode.immOffset(0x0B));
        assertEquals(12, Opcode.immOffset(0x03));
        assertEquals(12, Opcode.immOffset(0x17));
        // payload-bearing opcodes
        for (Opcode op : ops) {
            boolean payload = switch (op) {
                case RDMA_READ_REQUEST, ACKNOWLEDGE, ATOMIC_ACKNOWLEDGE, COMPARE_SWAP, FETCH_ADD, CNP -> false;
                default -> true;
            };
            assertEquals(payload, op.has(Opcode.PAYLOAD), op.name());
        }
        assertTrue(Opcode.RDMA_WRITE_LAST_WITH_IMMEDIATE.has(Opcode.COMP));
        assertFalse(Opcode.RDMA_WRITE_LAST.has(Opcode.COMP));
    }

    @Test
    void packetFlyweightFramesAndPads() {
        ByteBuffer b = ByteBuffer.allocateDirect(256);
        int off = 10;
        int len = RocePacket.writeBth(
                b, off, Opcode.RDMA_WRITE_ONLY_WITH_IMMEDIATE.code(), true, 0xFFFF, 0x42, true, 7, 5);
        assertEquals(32 + 5 + 3 + 4, len);
        Reth.write(b, off + 12, 0x1000, 0x77, 5);
        ImmDt.write(b, off + 28, 99);
        for (int i = 0; i < 5; i++) b.put(off + 32 + i, (byte) (i + 1));
        RocePacket p = new RocePacket();
        assertEquals(RocePacket.OK, p.wrap(b, off, len));
        assertEquals(3, Bth.padCount(b, off));
        assertEquals(5, p.payloadLength());
        assertEquals(off + 32, p.payloadOffset());
        assertEquals(0x1000, p.rethVa());
        assertEquals(0x77, p.rethRkey());
        assertEquals(5, p.rethLength());
        assertEquals(99, p.immediate());
        assertEquals(0x42, p.destQp());
        assertEquals(7, p.psn());
        assertTrue(p.solicitedEvent());
        assertTrue(p.ackReq());
        assertEquals(RocePacket.TOO_SHORT, p.wrap(b, off, 15));
        b.put(off, (byte) 0x15);
        assertEquals(RocePacket.BAD_OPCODE, p.wrap(b, off, len));
        b.put(off, (byte) 0x0B);
        assertEquals(RocePacket.BAD_LENGTH, p.wrap(b, off, 32 + 2));
        // an ACK must not carry payload
        RocePacket.writeBth(b, 0, Opcode.ACKNOWLEDGE.code(), false, 0xFFFF, 1, false, 1, 0);
        assertEquals(RocePacket.OK, p.wrap(b, 0, 20));
        assertEquals(RocePacket.BAD_LENGTH, p.wrap(b, 0, 24));
    }

    @Test
    void mtu() {
        assertEquals(256, Mtu.ofCode(1).bytes());
        assertEquals(4096, Mtu.ofCode(5).bytes());
        assertEquals(3, Mtu.ofBytes(1024).code());
        assertEquals(Mtu.MTU_1024, Mtu.floor(1500));
        assertEquals(Mtu.MTU_4096, Mtu.floor(9000));
        assertThrows(IllegalArgumentException.class, () -> Mtu.ofCode(6));
        assertThrows(IllegalArgumentException.class, () -> Mtu.ofBytes(1000));
    }
}
