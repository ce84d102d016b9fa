package dev.jrdma.verbs;

/**
 * A work completion ({@code struct ibv_wc}). Allocate an array once and let {@code CompletionQueue.poll} fill it
 * again and again.
 */
public final class WorkCompletion {
    /** {@code ibv_wc_flags} bits. */
    public static final int WITH_GRH = 1, WITH_IMM = 2, IP_CSUM_OK = 4, WITH_INV = 8;

    public long wrId;
    public WcStatus status = WcStatus.SUCCESS;
    /** Valid only when status is SUCCESS (as in libibverbs). */
    public WcOpcode opcode;
    public int vendorErr;
    public int byteLen;
    /** Immediate data in host order when {@link #hasImm()}, or the invalidated rkey when {@link #hasInv()}. */
    public int immData;
    public int qpNum;
    public int srcQp;
    public int wcFlags;
    public int pkeyIndex;
    public int slid;
    public int sl;
    public int dlidPathBits;

    public boolean isSuccess() {
        return status == WcStatus.SUCCESS;
    }

    public boolean hasImm() {
        return (wcFlags & WITH_IMM) != 0;
    }

    /** UD receives: the first 40 bytes of the buffer hold the sender's GRH (or IPv4 header on RoCEv2); see {@link Grh}. */
    public boolean hasGrh() {
        return (wcFlags & WITH_GRH) != 0;
    }

    public boolean hasInv() {
        return (wcFlags & WITH_INV) != 0;
    }

    /** Copies every field of another completion into this one. */
    public WorkCompletion copyFrom(WorkCompletion o) {
        wrId = o.wrId; status = o.status; opcode = o.opcode; vendorErr = o.vendorErr; byteLen = o.byteLen;
        immData = o.immData; qpNum = o.qpNum; srcQp = o.srcQp; wcFlags = o.wcFlags; pkeyIndex = o.pkeyIndex;
        slid = o.slid; sl = o.sl; dlidPathBits = o.dlidPathBits;
        return this;
    }

    public static WorkCompletion[] array(int n) {
        WorkCompletion[] a = new WorkCompletion[n];
        for (int i = 0; i < n; i++) a[i] = new WorkCompletion();
        return a;
    }

    /** A failed completion as an exception message: status, meaning, remedy. */
    public String explain() {
        return "work request " + wrId + " on QP " + qpNum + ": " + status.describe();
    }

    @Override
    public String toString() {
        return "WorkCompletion[wrId=" + wrId + ", status=" + status + ", opcode=" + opcode + ", byteLen=" + byteLen
                + (hasImm() ? ", imm=0x" + Integer.toHexString(immData) : "") + (hasInv() ? ", invRkey=0x" + Integer.toHexString(immData) : "")
                + ", qpNum=" + qpNum + ", srcQp=" + srcQp + "]";
    }
}
