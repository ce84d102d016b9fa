package dev.jrdma.verbs;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Completions read in place: {@link CompletionQueue#poll(Completions, int)} has the provider write its
 * {@code struct ibv_wc} entries straight into this object's memory, and each accessor reads one field of one entry
 * from there, so nothing is copied or decoded that the caller does not look at. The fast path for a loop that polls
 * often and reads a few fields (the wr_id and the status); {@link CompletionQueue#poll(WorkCompletion[], int)} copies
 * every field into objects instead. Make one per polling thread and poll into it again and again; an entry is valid
 * until the next poll into the same object. The memory is freed with the object.
 */
public final class Completions {
    /** {@code sizeof(struct ibv_wc)} on LP64 (x86-64, aarch64), the stride of the entries. */
    public static final int ENTRY_BYTES = 48;
    // struct ibv_wc (infiniband/verbs.h), LP64
    private static final long WR_ID = 0,
            STATUS = 8,
            OPCODE = 12,
            VENDOR_ERR = 16,
            BYTE_LEN = 20,
            IMM = 24,
            QP_NUM = 28,
            SRC_QP = 32,
            WC_FLAGS = 36,
            PKEY = 40,
            SLID = 42,
            SL = 44,
            DLID_BITS = 45;

    private final int capacity;
    private final MemorySegment entries;
    /** For {@link CompletionQueue}'s default poll, which polls objects and writes them here (made on first use). */
    private WorkCompletion[] scratch;

    /**
     * Room for {@code capacity} completions.
     *
     * @param capacity the most one poll takes, at least 1
     */
    public Completions(int capacity) {
        if (capacity < 1) throw new IllegalArgumentException("capacity must be at least 1, not " + capacity);
        this.capacity = capacity;
        entries = Arena.ofAuto().allocate((long) capacity * ENTRY_BYTES, 8);
    }

    /** {@return the most completions one poll takes} */
    public int capacity() {
        return capacity;
    }

    /**
     * The entries' memory, {@link #capacity()} {@code struct ibv_wc}s: what a provider polls into (and what a caller
     * may read with its own layouts).
     *
     * @return the memory, {@code capacity() * ENTRY_BYTES} bytes
     */
    public MemorySegment memory() {
        return entries;
    }

    private static long at(int i) {
        return (long) i * ENTRY_BYTES;
    }

    /**
     * {@return its {@code wr_id}}
     *
     * @param i the entry, 0 .. the count the poll returned - 1
     */
    public long wrId(int i) {
        return entries.get(JAVA_LONG, at(i) + WR_ID);
    }

    /**
     * {@return its status ({@code GENERAL_ERR} for a code jrdma does not know)}
     *
     * @param i the entry
     */
    public WcStatus status(int i) {
        int code = entries.get(JAVA_INT, at(i) + STATUS);
        if (code == 0) return WcStatus.SUCCESS; // IBV_WC_SUCCESS
        WcStatus s = WcStatus.of(code);
        return s == null ? WcStatus.GENERAL_ERR : s;
    }

    /**
     * {@return whether its status is SUCCESS}
     *
     * @param i the entry
     */
    public boolean isSuccess(int i) {
        return entries.get(JAVA_INT, at(i) + STATUS) == 0;
    }

    /**
     * {@return what completed (valid only when {@link #isSuccess}, as in libibverbs), or null}
     *
     * @param i the entry
     */
    public WcOpcode opcode(int i) {
        return WcOpcode.of(entries.get(JAVA_INT, at(i) + OPCODE));
    }

    /**
     * {@return the device's own error code ({@code vendor_err})}
     *
     * @param i the entry
     */
    public int vendorErr(int i) {
        return entries.get(JAVA_INT, at(i) + VENDOR_ERR);
    }

    /**
     * {@return the bytes transferred ({@code byte_len}), as {@link WorkCompletion#byteLen}}
     *
     * @param i the entry
     */
    public int byteLen(int i) {
        return entries.get(JAVA_INT, at(i) + BYTE_LEN);
    }

    /**
     * {@return the {@code ibv_wc_flags} bits, as {@link WorkCompletion#wcFlags}}
     *
     * @param i the entry
     */
    public int wcFlags(int i) {
        return entries.get(JAVA_INT, at(i) + WC_FLAGS);
    }

    /**
     * The immediate data or invalidated rkey of entry {@code i}.
     *
     * @param i the entry
     * @return immediate data in host order when {@link #wcFlags} has {@link WorkCompletion#WITH_IMM}, or the invalidated
     *         rkey with {@link WorkCompletion#WITH_INV}, as {@link WorkCompletion#immData}
     */
    public int immData(int i) {
        int imm = entries.get(JAVA_INT, at(i) + IMM);
        return (wcFlags(i) & WorkCompletion.WITH_IMM) != 0 ? Integer.reverseBytes(imm) : imm; // __be32 in ibv_wc
    }

    /**
     * {@return the local QP's number ({@code qp_num})}
     *
     * @param i the entry
     */
    public int qpNum(int i) {
        return entries.get(JAVA_INT, at(i) + QP_NUM);
    }

    /**
     * {@return UD receives: the sender's QP number ({@code src_qp})}
     *
     * @param i the entry
     */
    public int srcQp(int i) {
        return entries.get(JAVA_INT, at(i) + SRC_QP);
    }

    /**
     * Copies every field of entry {@code i} into a {@link WorkCompletion} (for a failure's report, or code written
     * for objects).
     *
     * @param i  the entry
     * @param wc the object to fill
     * @return {@code wc}
     */
    public WorkCompletion copyTo(int i, WorkCompletion wc) {
        long b = at(i);
        wc.wrId = wrId(i);
        wc.status = status(i);
        wc.opcode = opcode(i);
        wc.vendorErr = vendorErr(i);
        wc.byteLen = byteLen(i);
        wc.wcFlags = wcFlags(i);
        wc.immData = immData(i);
        wc.qpNum = qpNum(i);
        wc.srcQp = srcQp(i);
        wc.pkeyIndex = Short.toUnsignedInt(entries.get(JAVA_SHORT, b + PKEY));
        wc.slid = Short.toUnsignedInt(entries.get(JAVA_SHORT, b + SLID));
        wc.sl = Byte.toUnsignedInt(entries.get(JAVA_BYTE, b + SL));
        wc.dlidPathBits = Byte.toUnsignedInt(entries.get(JAVA_BYTE, b + DLID_BITS));
        return wc;
    }

    /**
     * {@return it as a failure's message, as {@link WorkCompletion#explain()}}
     *
     * @param i the entry
     */
    public String explain(int i) {
        return copyTo(i, new WorkCompletion()).explain();
    }

    /** Writes {@code wc} as entry {@code i}, as a provider's poll_cq would (the default poll's way in). */
    void set(int i, WorkCompletion wc) {
        long b = at(i);
        entries.set(JAVA_LONG, b + WR_ID, wc.wrId);
        entries.set(JAVA_INT, b + STATUS, wc.status.code());
        entries.set(JAVA_INT, b + OPCODE, wc.opcode == null ? 0 : wc.opcode.code);
        entries.set(JAVA_INT, b + VENDOR_ERR, wc.vendorErr);
        entries.set(JAVA_INT, b + BYTE_LEN, wc.byteLen);
        entries.set(JAVA_INT, b + IMM, wc.hasImm() ? Integer.reverseBytes(wc.immData) : wc.immData);
        entries.set(JAVA_INT, b + QP_NUM, wc.qpNum);
        entries.set(JAVA_INT, b + SRC_QP, wc.srcQp);
        entries.set(JAVA_INT, b + WC_FLAGS, wc.wcFlags);
        entries.set(JAVA_SHORT, b + PKEY, (short) wc.pkeyIndex);
        entries.set(JAVA_SHORT, b + SLID, (short) wc.slid);
        entries.set(JAVA_BYTE, b + SL, (byte) wc.sl);
        entries.set(JAVA_BYTE, b + DLID_BITS, (byte) wc.dlidPathBits);
    }

    WorkCompletion[] scratch() {
        if (scratch == null) scratch = WorkCompletion.array(capacity);
        return scratch;
    }
}
