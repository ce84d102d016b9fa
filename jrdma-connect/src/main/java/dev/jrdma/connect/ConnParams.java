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
 *
 * @param addr  the address of the buffer this side offers the peer (0 when none)
 * @param rkey  the rkey of that buffer (0 when none)
 * @param qpNum this side's QP number (24 bits); the peer's QP goes to RTR with it as {@code dest_qp_num}
 * @param lid   this side's port LID (InfiniBand; 0 on RoCE), 16 bits
 * @param gid   this side's GID, the path's destination GID on the peer (RoCE); null is taken as {@link Gid#ZERO}
 * @param psn   the first packet sequence number this side sends (24 bits): the peer's {@code rq_psn}
 * @param mtu   this side's port's active MTU; each side moves its QP to RTR with the smaller of the two
 */
public record ConnParams(long addr, int rkey, int qpNum, int lid, Gid gid, int psn, Mtu mtu) {
    /** The first four bytes of the record: {@code "JRCP"} in ASCII. */
    public static final int MAGIC = 0x4A524350;
    /** The wire format's version; {@link #readFrom} refuses any other. */
    public static final int VERSION = 1;
    /** Encoded size in bytes. */
    public static final int SIZE = 4 + 2 + 8 + 4 + 4 + 2 + 16 + 4 + 1;

    /**
     * Checks the ranges.
     *
     * @throws IllegalArgumentException when the QP number or PSN does not fit 24 bits, the LID 16 bits, or
     *                                  {@code mtu} is null
     */
    public ConnParams {
        if ((qpNum & ~0xFFFFFF) != 0)
            throw new IllegalArgumentException("QP number 0x" + Integer.toHexString(qpNum) + " does not fit 24 bits");
        if ((psn & ~0xFFFFFF) != 0)
            throw new IllegalArgumentException("PSN 0x" + Integer.toHexString(psn) + " does not fit 24 bits");
        if (lid < 0 || lid > 0xFFFF) throw new IllegalArgumentException("LID " + lid + " does not fit 16 bits");
        if (gid == null) gid = Gid.ZERO;
        if (mtu == null) throw new IllegalArgumentException("mtu is required");
    }

    /**
     * Writes the 44-byte wire format.
     *
     * @param out where to (e.g. a socket's {@link java.io.DataOutputStream}); not flushed
     * @throws IOException when {@code out} fails
     */
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

    /**
     * Reads and validates the 44-byte wire format.
     *
     * @param in where from
     * @return the peer's parameters
     * @throws RdmaConnectException with {@link RdmaConnectException.Reason#PROTOCOL_ERROR} when the magic is wrong,
     *                              the QP number or PSN does not fit 24 bits, the QP number is 0 or 1, or the MTU code
     *                              is outside 1..5; {@link RdmaConnectException.Reason#VERSION_MISMATCH} for another
     *                              version
     * @throws IOException          when {@code in} fails or ends early ({@link java.io.EOFException})
     */
    public static ConnParams readFrom(DataInput in) throws IOException {
        int magic = in.readInt();
        if (magic != MAGIC) {
            throw new RdmaConnectException(
                    RdmaConnectException.Reason.PROTOCOL_ERROR,
                    String.format(
                            "the peer is not a jrdma program: connection parameters start with 0x%08x, expected 0x%08x (\"JRCP\")",
                            magic, MAGIC));
        }
        int version = in.readUnsignedShort();
        if (version != VERSION) {
            throw new RdmaConnectException(
                    RdmaConnectException.Reason.VERSION_MISMATCH,
                    "version mismatch: the peer sends connection parameters version " + version
                            + ", this side reads version " + VERSION + " (run the same jrdma version on both sides)");
        }
        long addr = in.readLong();
        int rkey = in.readInt();
        int qpn = in.readInt();
        int lid = in.readUnsignedShort();
        byte[] gid = new byte[16];
        in.readFully(gid);
        int psn = in.readInt();
        int mtu = in.readUnsignedByte();
        if ((qpn & ~0xFFFFFF) != 0)
            throw bad("QP number 0x" + Integer.toHexString(qpn) + ", which does not fit 24 bits");
        if (qpn == 0 || qpn == 1) throw bad("QP number " + qpn + ", which is reserved (QP0/QP1 are management QPs)");
        if ((psn & ~0xFFFFFF) != 0) throw bad("PSN 0x" + Integer.toHexString(psn) + ", which does not fit 24 bits");
        if (mtu < 1 || mtu > 5) throw bad("MTU code " + mtu + ", outside 1..5 (256..4096 bytes)");
        return new ConnParams(addr, rkey, qpn, lid, Gid.of(gid), psn, Mtu.of(mtu));
    }

    private static RdmaConnectException bad(String what) {
        return new RdmaConnectException(
                RdmaConnectException.Reason.PROTOCOL_ERROR, "invalid connection parameters: the peer sent " + what);
    }

    @Override
    public String toString() {
        return String.format(
                "addr=0x%x rkey=0x%08x qpn=0x%06x lid=%d gid=%s psn=0x%06x mtu=%s",
                addr, rkey, qpNum, lid, gid, psn, mtu);
    }
}
