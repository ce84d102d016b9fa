package dev.jrdma.connect;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.verbs.Gid;
import dev.jrdma.verbs.Mtu;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import org.junit.jupiter.api.Test;

class ConnParamsTest {
    private static final ConnParams P =
            new ConnParams(0x7f00_1234_5678L, 0xCAFE01, 0x11, 0, Gid.parse("::ffff:127.0.0.2"), 0xABCDEF, Mtu.MTU_1024);

    private static byte[] encode(ConnParams p) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        p.writeTo(new DataOutputStream(b));
        return b.toByteArray();
    }

    private static ConnParams decode(byte[] b) throws IOException {
        return ConnParams.readFrom(new DataInputStream(new ByteArrayInputStream(b)));
    }

    @Test
    void roundTrip() throws IOException {
        byte[] b = encode(P);
        assertEquals(ConnParams.SIZE, b.length);
        assertEquals(P, decode(b));
    }

    @Test
    void badMagicIsNamed() throws IOException {
        byte[] b = encode(P);
        b[0] = 'X';
        RdmaConnectException e = assertThrows(RdmaConnectException.class, () -> decode(b));
        assertEquals(RdmaConnectException.Reason.PROTOCOL_ERROR, e.reason());
        assertTrue(e.getMessage().contains("not a jrdma program"), e.getMessage());
    }

    @Test
    void versionMismatchIsNamed() throws IOException {
        byte[] b = encode(P);
        b[5] = 7;
        RdmaConnectException e = assertThrows(RdmaConnectException.class, () -> decode(b));
        assertEquals(RdmaConnectException.Reason.VERSION_MISMATCH, e.reason());
        assertTrue(e.getMessage().contains("version 7"), e.getMessage());
    }

    @Test
    void rangesAreChecked() throws IOException {
        byte[] b = encode(P);
        ByteBuffer.wrap(b).putInt(18, 0x1000000); // QPN beyond 24 bits
        assertTrue(assertThrows(RdmaConnectException.class, () -> decode(b))
                .getMessage()
                .contains("24 bits"));
        byte[] c = encode(P);
        c[c.length - 1] = 9; // MTU code
        assertTrue(assertThrows(RdmaConnectException.class, () -> decode(c))
                .getMessage()
                .contains("MTU code 9"));
        byte[] d = encode(P);
        ByteBuffer.wrap(d).putInt(40, 0x2000000); // PSN
        assertTrue(assertThrows(RdmaConnectException.class, () -> decode(d))
                .getMessage()
                .contains("PSN"));
        byte[] t = encode(P);
        assertThrows(java.io.EOFException.class, () -> decode(java.util.Arrays.copyOf(t, 20)));
    }

    @Test
    void remoteBufferBytes() {
        RemoteBuffer rb = new RemoteBuffer(0x1234_5678_9abcL, 0xdeadbeef, 4096);
        assertEquals(rb, RemoteBuffer.fromBytes(rb.toBytes()));
        assertEquals(new RemoteBuffer(0x1234_5678_9abcL + 8, 0xdeadbeef, 16), rb.slice(8, 16));
        assertThrows(IndexOutOfBoundsException.class, () -> rb.slice(4090, 16));
        assertThrows(IllegalArgumentException.class, () -> RemoteBuffer.fromBytes(new byte[RemoteBuffer.BYTES]));
        assertArrayEquals(rb.toBytes(), RemoteBuffer.fromBytes(rb.toBytes()).toBytes());
    }
}
