package dev.jrdma.connect;

import dev.jrdma.verbs.Gid;
import dev.jrdma.verbs.Mtu;

import java.io.DataInput;
import java.io.DataOutput;
import java.io.IOException;

/**
 * The seed article's {@code struct rdma_conn_params}: what two sides tell each other out of band before their QPs
 * can reach RTS (buffer address, rkey, QP number, LID, GID), plus the PSN and MTU a real program also needs.
 *
 * <p>Wire format (big-endian, 44 bytes): magic {@code "JRCP"}, u16 version (1), u64 addr, u32 rkey, u32 qpn,
 * u16 lid, 16-byte GID, u32 psn, u8 MTU enum (1..5). {@link #readFrom} validates the magic, the version and the
 * ranges (QPN and PSN fit 24 bits, a known MTU) and throws an {@link RdmaConnectException} that says which.
 * This is the canonical out-of-band record of jrdma; the examples and the endpoint handshake both use it.
 */
public record ConnParams(long addr, int rkey, int qpNum, int lid, Gid gid, int psn, Mtu mtu) {
    public static final int MAGIC = 0x4A524350; // "JRCP"
    public static final int VERSION = 1;
    /** Encoded size in bytes. */
    public static final int SIZE = 4 + 2 + 8 + 4 + 4 + 2 + 16 + 4 + 1;

    public ConnParams {
        if ((qpNum & ~0xFFFFFF) != 0) throw new IllegalArgumentException("QP number 0x" + Integer.toHexString(qpNum) + " does not fit 24 bits");
        if ((psn & ~0xFFFFFF) != 0) throw new IllegalArgumentException("PSN 0x" + Integer.toHexString(psn) + " does not fit 24 bits");
        if (lid < 0 || lid > 0xFFFF) throw new IllegalArgumentException("LID " + lid + " does not fit 16 bits");
        if (gid == null) gid = Gid.ZERO;
        if (mtu == null) throw new IllegalArgumentException("mtu is required");
    }

    public void writeTo(DataOutput out) throws IOException {
        out.writeInt(MAGIC);
        out.writeShort(VERSION);
        out.writeLong(addr);
        out.writeInt(rkey);
        out.writeInt(qpNum);
        out.writeShort(lid);
        out.write(gid.toByteArray());
        out.writeInt(psn);
        out.writeByte(mtu.code);
    }

    public static ConnParams readFrom(DataInput in) throws IOException {
        int magic = in.readInt();
        if (magic != MAGIC) {
            throw new RdmaConnectException(RdmaConnectException.Reason.PROTOCOL_ERROR,
                    String.format("the peer is not a jrdma program: connection parameters start with 0x%08x, expected 0x%08x (\"JRCP\")", magic, MAGIC));
        }
        int version = in.readUnsignedShort();
        if (version != VERSION) {
            throw new RdmaConnectException(RdmaConnectException.Reason.VERSION_MISMATCH,
                    "version mismatch: the peer sends connection parameters version " + version + ", this side reads version " + VERSION
                            + " (run the same jrdma version on both sides)");
        }
        long addr = in.readLong();
        int rkey = in.readInt();
        int qpn = in.readInt();
        int lid = in.readUnsignedShort();
        byte[] gid = new byte[16];
        in.readFully(gid);
        int psn = in.readInt();
        int mtu = in.readUnsignedByte();
        if ((qpn & ~0xFFFFFF) != 0) throw bad("QP number 0x" + Integer.toHexString(qpn) + ", which does not fit 24 bits");
        if (qpn == 0 || qpn == 1) throw bad("QP number " + qpn + ", which is reserved (QP0/QP1 are management QPs)");
        if ((psn & ~0xFFFFFF) != 0) throw bad("PSN 0x" + Integer.toHexString(psn) + ", which does not fit 24 bits");
        if (mtu < 1 || mtu > 5) throw bad("MTU code " + mtu + ", outside 1..5 (256..4096 bytes)");
        return new ConnParams(addr, rkey, qpn, lid, Gid.of(gid), psn, Mtu.of(mtu));
    }

    private static RdmaConnectException bad(String what) {
        return new RdmaConnectException(RdmaConnectException.Reason.PROTOCOL_ERROR, "invalid connection parameters: the peer sent " + what);
    }

    @Override
    public String toString() {
        return String.format("addr=0x%x rkey=0x%08x qpn=0x%06x lid=%d gid=%s psn=0x%06x mtu=%s", addr, rkey, qpNum, lid, gid, psn, mtu);
    }
}
