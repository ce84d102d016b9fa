package dev.jrdma.nativeverbs;

import static dev.jrdma.nativeverbs.Layouts.offset;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.Sge;
import dev.jrdma.verbs.WrOpcode;
import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemorySegment;

/**
 * Writes Java work requests into native {@code ibv_send_wr}, {@code ibv_recv_wr} and {@code ibv_sge} structs in place
 * (the QP's arrays or a prepared chain), with plain stores and no allocation: the hot half of {@link NativeQp}'s
 * posts, after its checks passed.
 */
final class WorkRequestWriter {
    static final long SWR = Layouts.SEND_WR.byteSize(), RWR = Layouts.RECV_WR.byteSize(), SGE = Layouts.SGE.byteSize();
    private static final GroupLayout S = Layouts.SEND_WR;
    static final long S_WR_ID = offset(S, "wr_id"),
            S_NEXT = offset(S, "next"),
            S_SG_LIST = offset(S, "sg_list"),
            S_NUM_SGE = offset(S, "num_sge"),
            S_OPCODE = offset(S, "opcode"),
            S_FLAGS = offset(S, "send_flags"),
            S_IMM = offset(S, "imm_data"),
            S_INV = offset(S, "invalidate_rkey"),
            S_RDMA_ADDR = offset(S, "wr.rdma.remote_addr"),
            S_RDMA_RKEY = offset(S, "wr.rdma.rkey"),
            S_AT_ADDR = offset(S, "wr.atomic.remote_addr"),
            S_AT_CMP = offset(S, "wr.atomic.compare_add"),
            S_AT_SWAP = offset(S, "wr.atomic.swap"),
            S_AT_RKEY = offset(S, "wr.atomic.rkey"),
            S_BIND_MW = offset(S, "bind_mw.mw"),
            S_BIND_RKEY = offset(S, "bind_mw.rkey"),
            S_BIND_MR = offset(S, "bind_mw.bind_info.mr"),
            S_BIND_ADDR = offset(S, "bind_mw.bind_info.addr"),
            S_BIND_LEN = offset(S, "bind_mw.bind_info.length"),
            S_BIND_ACCESS = offset(S, "bind_mw.bind_info.mw_access_flags"),
            S_UD_AH = offset(S, "wr.ud.ah"),
            S_UD_QPN = offset(S, "wr.ud.remote_qpn"),
            S_UD_QKEY = offset(S, "wr.ud.remote_qkey");
    static final long R_WR_ID = offset(Layouts.RECV_WR, "wr_id"),
            R_NEXT = offset(Layouts.RECV_WR, "next"),
            R_SG_LIST = offset(Layouts.RECV_WR, "sg_list"),
            R_NUM_SGE = offset(Layouts.RECV_WR, "num_sge");
    static final long G_ADDR = offset(Layouts.SGE, "addr"),
            G_LEN = offset(Layouts.SGE, "length"),
            G_LKEY = offset(Layouts.SGE, "lkey");

    private WorkRequestWriter() {}

    /*
     * The hot stores write two adjacent 32-bit members at once (little-endian, as the x86-64/LP64 layouts are: the
     * low half is the member at the lower offset): num_sge|opcode, send_flags|imm_data, length|lkey. The static
     * check below holds the offsets to that pairing; LayoutConformanceTest holds Layouts to verbs.h.
     */
    static {
        if (S_OPCODE != S_NUM_SGE + 4
                || S_IMM != S_FLAGS + 4
                || G_LKEY != G_LEN + 4
                || S_NUM_SGE % 8 != 0
                || S_FLAGS % 8 != 0
                || G_LEN % 8 != 0
                || java.nio.ByteOrder.nativeOrder() != java.nio.ByteOrder.LITTLE_ENDIAN) {
            throw new ExceptionInInitializerError(
                    "struct ibv_send_wr/ibv_sge are not laid out as WorkRequestWriter.writeSend expects");
        }
    }

    /** Two 32-bit members as one 64-bit little-endian store: {@code low} at the lower offset. */
    private static long pair(int low, int high) {
        return (low & 0xFFFF_FFFFL) | ((long) high << 32);
    }

    /**
     * Writes request {@code wr} into the {@code ibv_send_wr} at address {@code b} as the last of its batch (next = null;
     * a chain links it after), its SGEs at {@code sgBase} (where its sg_list points already); {@code ud} adds its
     * address.
     */
    static void writeSend(long b, long sgBase, SendWorkRequest wr, int flags, boolean ud) {
        MemorySegment s = Ibv.NATIVE;
        int ns = wr.numSge();
        WrOpcode op = wr.opcode;
        s.set(JAVA_LONG, b + S_WR_ID, wr.wrId);
        s.set(JAVA_LONG, b + S_NEXT, 0L);
        s.set(JAVA_LONG, b + S_NUM_SGE, pair(ns, op.code));
        if (op == WrOpcode.RDMA_WRITE || op == WrOpcode.RDMA_READ) { // the common cases first, without a switch
            s.set(JAVA_LONG, b + S_FLAGS, pair(flags, 0));
            s.set(JAVA_LONG, b + S_RDMA_ADDR, wr.remoteAddr);
            s.set(JAVA_INT, b + S_RDMA_RKEY, wr.rkey);
        } else if (op == WrOpcode.SEND) {
            s.set(JAVA_LONG, b + S_FLAGS, pair(flags, 0));
        } else {
            s.set(JAVA_INT, b + S_FLAGS, flags);
            writeSendOther(b, wr, op);
        }
        if (ud) writeUd(b, wr);
        for (int k = 0; k < ns; k++) writeSge(s, sgBase + k * SGE, wr.sge(k));
    }

    /** The UD address of the request at {@code b} (NativeQp's validateSendFully checked and holds the handle). */
    private static void writeUd(long b, SendWorkRequest wr) {
        MemorySegment s = Ibv.NATIVE;
        s.set(JAVA_LONG, b + S_UD_AH, ((NativeAh) wr.ah).ah.address());
        s.set(JAVA_INT, b + S_UD_QPN, wr.remoteQpn);
        s.set(JAVA_INT, b + S_UD_QKEY, wr.remoteQkey);
    }

    /** One {@code ibv_sge} at {@code o} of {@code g}. */
    private static void writeSge(MemorySegment g, long o, Sge e) {
        g.set(JAVA_LONG, o + G_ADDR, e.addr);
        g.set(JAVA_LONG, o + G_LEN, pair(e.length, e.lkey));
    }

    /** The opcode-specific fields of the other opcodes (immediate data, atomics, windows) of the request at {@code b}. */
    private static void writeSendOther(long b, SendWorkRequest wr, WrOpcode op) {
        MemorySegment s = Ibv.NATIVE;
        switch (op) {
            case SEND_WITH_IMM, RDMA_WRITE_WITH_IMM ->
                s.set(JAVA_INT, b + S_IMM, Integer.reverseBytes(wr.immData)); // __be32
            case SEND_WITH_INV, LOCAL_INV -> s.set(JAVA_INT, b + S_INV, wr.invalidateRkey);
            default -> s.set(JAVA_INT, b + S_IMM, 0);
        }
        switch (op) {
            case RDMA_WRITE_WITH_IMM -> {
                s.set(JAVA_LONG, b + S_RDMA_ADDR, wr.remoteAddr);
                s.set(JAVA_INT, b + S_RDMA_RKEY, wr.rkey);
            }
            case ATOMIC_CMP_AND_SWP, ATOMIC_FETCH_AND_ADD -> {
                s.set(JAVA_LONG, b + S_AT_ADDR, wr.remoteAddr);
                s.set(JAVA_LONG, b + S_AT_CMP, wr.compareAdd);
                s.set(JAVA_LONG, b + S_AT_SWAP, wr.swap);
                s.set(JAVA_INT, b + S_AT_RKEY, wr.rkey);
            }
            case BIND_MW -> {
                NativeMw mw = (NativeMw) wr.bindMw;
                int rkey = wr.bindRkey;
                if (rkey == 0) {
                    int curKey = mw.rkeyEntered(); // NativeQp's validateSend holds it
                    rkey = (curKey & 0xFFFFFF00) | ((curKey + 1) & 0xFF); // ibv_inc_rkey
                }
                NativeMr mr = (NativeMr) wr.bindMr;
                s.set(JAVA_LONG, b + S_BIND_MW, mw.mw.address());
                s.set(JAVA_INT, b + S_BIND_RKEY, rkey);
                s.set(JAVA_LONG, b + S_BIND_MR, mr == null ? 0L : mr.mr.address());
                s.set(JAVA_LONG, b + S_BIND_ADDR, wr.bindAddr);
                s.set(JAVA_LONG, b + S_BIND_LEN, wr.bindLength);
                s.set(JAVA_INT, b + S_BIND_ACCESS, Access.toBits(wr.bindAccess));
                mw.boundRkey = rkey;
                mw.type2Posted = true;
                mw.boundMr = mr;
            }
            default -> {}
        }
    }

    /**
     * Writes request {@code wr} into the {@code ibv_recv_wr} at address {@code b} as the last of its batch (next = null;
     * a chain links it after), its SGEs at {@code sgBase} (where its sg_list points already).
     */
    static void writeRecv(long b, long sgBase, RecvWorkRequest wr) {
        MemorySegment s = Ibv.NATIVE;
        int ns = wr.numSge();
        s.set(JAVA_LONG, b + R_WR_ID, wr.wrId);
        s.set(JAVA_LONG, b + R_NEXT, 0L);
        s.set(JAVA_INT, b + R_NUM_SGE, ns);
        for (int k = 0; k < ns; k++) writeSge(s, sgBase + k * SGE, wr.sge(k));
    }
}
