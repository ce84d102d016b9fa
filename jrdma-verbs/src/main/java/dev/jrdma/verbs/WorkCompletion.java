package dev.jrdma.verbs;

/**
 * A work completion ({@code struct ibv_wc}). Allocate an array once and let {@code CompletionQueue.poll} fill it
 * again and again.
 */
public final class WorkCompletion {
    /**
     * {@code ibv_wc_flags} bits of {@link #wcFlags}: {@code IBV_WC_GRH} (a UD receive starts with the 40-byte GRH),
     * {@code IBV_WC_WITH_IMM} (immediate data in {@link #immData}), {@code IBV_WC_IP_CSUM_OK} (the device verified the
     * IP checksum) and {@code IBV_WC_WITH_INV} (the sender invalidated the rkey in {@link #immData}).
     */
    public static final int WITH_GRH = 1, WITH_IMM = 2, IP_CSUM_OK = 4, WITH_INV = 8;

    /** The {@code wr_id} of the work request that completed ({@code wr_id}). */
    public long wrId;
    /** The outcome ({@code status}); anything but SUCCESS moved the QP to the error state. */
    public WcStatus status = WcStatus.SUCCESS;
    /** What completed ({@code opcode}); valid only when status is SUCCESS (as in libibverbs). */
    public WcOpcode opcode;
    /** The device's own error code for a failed completion ({@code vendor_err}); 0 on the software device. */
    public int vendorErr;
    /** Bytes transferred ({@code byte_len}): for a receive the message length, with the 40-byte GRH of a UD receive. */
    public int byteLen;
    /** Immediate data in host order when {@link #hasImm()}, or the invalidated rkey when {@link #hasInv()}. */
    public int immData;
    /** The number of the local QP the request was posted on ({@code qp_num}). */
    public int qpNum;
    /** UD receives: the sender's QP number ({@code src_qp}). */
    public int srcQp;
    /**
     * The {@code ibv_wc_flags} bits ({@code wc_flags}): {@link #WITH_GRH}, {@link #WITH_IMM}, {@link #IP_CSUM_OK},
     * {@link #WITH_INV}.
     */
    public int wcFlags;
    /** UD receives (GSI QPs): the P_Key index the packet came with ({@code pkey_index}). */
    public int pkeyIndex;
    /** UD receives: the sender's LID ({@code slid}; InfiniBand, 0 on RoCE). */
    public int slid;
    /** UD receives: the service level of the packet ({@code sl}). */
    public int sl;
    /** UD receives: the path bits of the destination LID ({@code dlid_path_bits}; InfiniBand). */
    public int dlidPathBits;

    /** An empty completion (status SUCCESS), for a {@link CompletionQueue#poll} to fill. */
    public WorkCompletion() {}

    /** {@return whether {@link #status} is SUCCESS} */
    public boolean isSuccess() {
        return status == WcStatus.SUCCESS;
    }

    /** {@return whether {@link #immData} holds immediate data (the {@link #WITH_IMM} flag)} */
    public boolean hasImm() {
        return (wcFlags & WITH_IMM) != 0;
    }

    /**
     * {@return whether the buffer starts with the sender's GRH (the {@link #WITH_GRH} flag)}
     *
     * <p>UD receives: the first 40 bytes of the buffer hold the sender's GRH (or IPv4 header on RoCEv2); see {@link Grh}.
     */
    public boolean hasGrh() {
        return (wcFlags & WITH_GRH) != 0;
    }

    /**
     * {@return whether the sender invalidated a local rkey, which {@link #immData} holds (the {@link #WITH_INV} flag)}
     */
    public boolean hasInv() {
        return (wcFlags & WITH_INV) != 0;
    }

    /**
     * Copies every field of another completion into this one.
     *
     * @param o the completion to copy
     * @return this
     */
    public WorkCompletion copyFrom(WorkCompletion o) {
        wrId = o.wrId;
        status = o.status;
        opcode = o.opcode;
        vendorErr = o.vendorErr;
        byteLen = o.byteLen;
        immData = o.immData;
        qpNum = o.qpNum;
        srcQp = o.srcQp;
        wcFlags = o.wcFlags;
        pkeyIndex = o.pkeyIndex;
        slid = o.slid;
        sl = o.sl;
        dlidPathBits = o.dlidPathBits;
        return this;
    }

    /**
     * An array of {@code n} fresh completions, to poll into again and again.
     *
     * @param n the array's length
     * @return the array
     */
    public static WorkCompletion[] array(int n) {
        WorkCompletion[] a = new WorkCompletion[n];
        for (int i = 0; i < n; i++) a[i] = new WorkCompletion();
        return a;
    }

    /**
     * {@return a failed completion as an exception message: the work request, the QP, the status, its meaning and remedy}
     */
    public String explain() {
        return "work request " + wrId + " on QP " + qpNum + ": " + status.describe();
    }

    @Override
    public String toString() {
        return "WorkCompletion[wrId=" + wrId + ", status=" + status + ", opcode=" + opcode + ", byteLen=" + byteLen
                + (hasImm() ? ", imm=0x" + Integer.toHexString(immData) : "")
                + (hasInv() ? ", invRkey=0x" + Integer.toHexString(immData) : "")
                + ", qpNum=" + qpNum + ", srcQp=" + srcQp + "]";
    }
}
