package dev.jrdma.bench;

import static org.junit.jupiter.api.Assertions.*;

import dev.jrdma.verbs.Gid;
import java.io.DataInputStream;
import java.io.OutputStream;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

class PerftestWireTest {
    static final String NO_GID = "0000:0001:000011:abcdef:000001f1:00007f5694265000:00000000";
    static final String WITH_GID = "0000:0010:0000d2:0519a8:00001234:0000557a1b2c3000:"
            + "00:00:00:00:00:00:00:00:00:00:ff:ff:0a:63:00:01:00000000:";

    @Test
    void keyMessageWithoutGidIs59Bytes() {
        var d = new PerftestWire.Dest(0, 1, 0x11, 0xabcdef, 0x1f1, 0x7f5694265000L, null, 0);
        byte[] m = PerftestWire.encode(d);
        assertEquals(59, m.length);
        assertEquals(NO_GID, new String(m, 0, 58, StandardCharsets.US_ASCII));
        assertEquals(0, m[58]);
        assertEquals(d, PerftestWire.decode(m, false));
    }

    @Test
    void keyMessageWithGidIs108Bytes() {
        Gid gid = Gid.parse("::ffff:10.99.0.1");
        var d = new PerftestWire.Dest(0, 16, 0xd2, 0x0519a8, 0x1234, 0x557a1b2c3000L, gid, 0);
        byte[] m = PerftestWire.encode(d);
        assertEquals(108, m.length);
        assertEquals(WITH_GID, new String(m, 0, 107, StandardCharsets.US_ASCII));
        assertEquals(0, m[107]);
        var back = PerftestWire.decode(m, true);
        assertEquals(d, back);
        assertEquals(gid, back.gid());
    }

    @Test
    void rdmaCmKeyMessageIsPerftestsBigEndianStruct() {
        // -R: rdma_write_keys sends struct pingpong_dest (x86-64 layout, 56 bytes) with htobe32/htobe64 fields
        Gid gid = Gid.parse("::ffff:10.99.0.1");
        var d = new PerftestWire.Dest(0x1234, 16, 0xd2, 0x0519a8, 0xdeadbeef, 0x557a1b2c3000L, gid, 0);
        byte[] m = PerftestWire.encodeBinary(d);
        assertEquals(56, m.length);
        assertEquals(
                "00001234" + "00000010" + "000000d2" + "000519a8" + "deadbeef" + "00000000" + "0000557a1b2c3000"
                        + "00000000000000000000ffff0a630001" + "00000000" + "00000000",
                java.util.HexFormat.of().formatHex(m));
        assertEquals(d, PerftestWire.decodeBinary(m, true));
        // without a GID: zeros there and gid_index -1; what perftest wrote decodes field by field
        byte[] noGid = PerftestWire.encodeBinary(new PerftestWire.Dest(0, 1, 0x11, 0x22, 0x33, 0x4000, null, 0));
        assertEquals("ffffffff", java.util.HexFormat.of().formatHex(noGid, 52, 56));
        var back = PerftestWire.decodeBinary(noGid, false);
        assertEquals(0x11, back.qpn());
        assertEquals(0x4000, back.vaddr());
        assertNull(back.gid());
        assertThrows(BenchException.class, () -> PerftestWire.decodeBinary(new byte[20], true));
    }

    @Test
    void decodesWhatPerftestWrites() {
        // as perftest's sprintf(KEY_PRINT_FMT_GID) would write it, with upper bits in every field
        String s =
                "ffff:0004:ffffff:123456:deadbeef:ffffffffffffffff:fe:80:00:00:00:00:00:00:02:42:ac:ff:fe:11:00:02:0000abcd:";
        byte[] m = Arrays.copyOf(s.getBytes(StandardCharsets.US_ASCII), 108);
        var d = PerftestWire.decode(m, true);
        assertEquals(0xffff, d.lid());
        assertEquals(4, d.outReads());
        assertEquals(0xffffff, d.qpn());
        assertEquals(0x123456, d.psn());
        assertEquals(0xdeadbeef, d.rkey());
        assertEquals(-1L, d.vaddr());
        assertEquals("fe80:0000:0000:0000:0242:acff:fe11:0002", d.gid().toString());
        assertEquals(0xabcd, d.srqn());
        assertArrayEquals(m, PerftestWire.encode(d));
    }

    @Test
    void garbageIsAClearError() {
        var e = assertThrows(
                BenchException.class, () -> PerftestWire.decode("0000:0001".getBytes(StandardCharsets.US_ASCII), true));
        assertTrue(e.getMessage().contains("-x"), e.getMessage());
    }

    /** A byte-level perftest server (the note's sequence), against our client side of the exchange. */
    @Test
    @Timeout(20)
    void exchangeAgainstAByteLevelPeer() throws Exception {
        try (ServerSocket ss = new ServerSocket(0)) {
            CompletableFuture<byte[][]> peer = CompletableFuture.supplyAsync(
                    () -> {
                        try (Socket s = ss.accept()) {
                            DataInputStream in = new DataInputStream(s.getInputStream());
                            OutputStream out = s.getOutputStream();
                            byte[] ver = new byte[16];
                            in.readFully(ver); // server reads first
                            out.write(Arrays.copyOf("6.06".getBytes(StandardCharsets.US_ASCII), 16));
                            byte[] page = new byte[4],
                                    line = new byte[4],
                                    mtu = new byte[2],
                                    key = new byte[108],
                                    rep = new byte[8],
                                    done = new byte[5];
                            in.readFully(page);
                            out.write(ByteBuffer.allocate(4).putInt(8192).array());
                            in.readFully(line);
                            out.write(ByteBuffer.allocate(4).putInt(128).array());
                            in.readFully(mtu);
                            out.write(new byte[] {'3', 0});
                            in.readFully(key);
                            out.write(PerftestWire.encode(new PerftestWire.Dest(
                                    0, 1, 0x99, 0x1234, 0x55, 0x1000, Gid.parse("::ffff:10.99.0.2"), 0)));
                            in.readFully(rep);
                            out.write(new byte[8]);
                            byte[] sizeRep = rep.clone();
                            for (int i = 0; i < 4; i++) {
                                in.readFully(rep);
                                out.write(new byte[8]);
                            }
                            in.readFully(key);
                            out.write(key); // close: handshake
                            in.readFully(done);
                            out.write("done\0".getBytes(StandardCharsets.US_ASCII));
                            return new byte[][] {ver, page, line, mtu, sizeRep, done};
                        } catch (Exception e) {
                            throw new RuntimeException(e);
                        }
                    },
                    java.util.concurrent.Executors.newSingleThreadExecutor());
            try (PerftestWire w = PerftestWire.client(PerftestWire.connect("127.0.0.1", ss.getLocalPort(), 5), 5)) {
                assertEquals("6.06", w.versions());
                assertArrayEquals(new int[] {8192, 128}, w.sysData(4096, 64));
                assertEquals(3, w.mtu(4)); // the smaller of 1024 (3) and 2048 (4)
                var me = new PerftestWire.Dest(0, 1, 0x11, 0x22, 0x33, 0x4000, Gid.parse("::ffff:10.99.0.1"), 0);
                var rem = w.handshake(me);
                assertEquals(0x99, rem.qpn());
                assertEquals(Gid.parse("::ffff:10.99.0.2"), rem.gid());
                w.bwReports(new BwResult(65536, 10, 1, 1, 1));
                w.closeConnection(me);
            }
            byte[][] seen = peer.get(10, TimeUnit.SECONDS);
            assertEquals("6.06", PerftestWire.cString(seen[0]));
            assertEquals(4096, ByteBuffer.wrap(seen[1]).getInt());
            assertEquals(64, ByteBuffer.wrap(seen[2]).getInt());
            assertArrayEquals(new byte[] {'4', 0}, seen[3]);
            assertEquals(65536, ByteBuffer.wrap(seen[4]).getLong()); // 8-byte big-endian size
            assertEquals("done", PerftestWire.cString(seen[5]));
        }
    }

    @Test
    void oldPerftestIsRefused() throws Exception {
        try (ServerSocket ss = new ServerSocket(0)) {
            CompletableFuture.runAsync(
                    () -> {
                        try (Socket s = ss.accept()) {
                            s.getInputStream().readNBytes(16);
                            s.getOutputStream().write(Arrays.copyOf("5.60".getBytes(StandardCharsets.US_ASCII), 16));
                            s.getInputStream().read();
                        } catch (Exception ignored) {
                        }
                    },
                    java.util.concurrent.Executors.newSingleThreadExecutor());
            try (PerftestWire w = PerftestWire.client(PerftestWire.connect("127.0.0.1", ss.getLocalPort(), 5), 5)) {
                var e = assertThrows(BenchException.class, w::versions);
                assertTrue(e.getMessage().contains("5.70"), e.getMessage());
            }
        }
    }
}
