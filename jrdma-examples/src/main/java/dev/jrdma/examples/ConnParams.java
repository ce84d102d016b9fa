package dev.jrdma.examples;

import dev.jrdma.verbs.Gid;
import dev.jrdma.verbs.Mtu;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;

/**
 * The article's {@code struct rdma_conn_params}: what two sides tell each other out of band before their QPs
 * can reach RTS (buffer address, rkey, QP number, LID, GID), plus the PSN and MTU a real program also needs.
 * Sent as a small versioned big-endian record: magic "JRCP", version, then the fields.
 */
public record ConnParams(long addr, int rkey, int qpNum, int lid, Gid gid, int psn, Mtu mtu) {
    static final int MAGIC = 0x4A524350; // "JRCP"
    static final int VERSION = 1;

    public void writeTo(DataOutputStream out) throws IOException {
        out.writeInt(MAGIC);
        out.writeShort(VERSION);
        out.writeLong(addr);
        out.writeInt(rkey);
        out.writeInt(qpNum);
        out.writeShort(lid);
        out.write(gid.toByteArray());
        out.writeInt(psn);
        out.writeByte(mtu.code);
        out.flush();
    }

    public static ConnParams readFrom(DataInputStream in) throws IOException {
        int magic = in.readInt();
        if (magic != MAGIC) throw new IOException(String.format("peer is not a jrdma program (magic 0x%08x, expected 0x%08x)", magic, MAGIC));
        int version = in.readUnsignedShort();
        if (version != VERSION) throw new IOException("peer speaks connection-parameter version " + version + ", this side " + VERSION);
        long addr = in.readLong();
        int rkey = in.readInt();
        int qpn = in.readInt();
        int lid = in.readUnsignedShort();
        byte[] gid = new byte[16];
        in.readFully(gid);
        int psn = in.readInt();
        int mtu = in.readUnsignedByte();
        if ((qpn & ~0xFFFFFF) != 0) throw new IOException("peer sent QP number " + qpn + ", which does not fit 24 bits");
        if ((psn & ~0xFFFFFF) != 0) throw new IOException("peer sent PSN " + psn + ", which does not fit 24 bits");
        return new ConnParams(addr, rkey, qpn, lid, Gid.of(gid), psn, Mtu.of(mtu));
    }

    @Override
    public String toString() {
        return String.format("addr=0x%x rkey=0x%08x qpn=0x%06x lid=%d gid=%s psn=0x%06x mtu=%s", addr, rkey, qpNum, lid, gid, psn, mtu);
    }
}
