package dev.jrdma.verbs;

/**
 * Work completion statuses ({@code enum ibv_wc_status}), each with what it means and what to do.
 * The seed article's table (LOC_LEN_ERR, LOC_QP_OP_ERR, RNR_RETRY_EXC_ERR), extended to every status.
 * Any status but SUCCESS moves the queue pair to the error state: later work requests complete with WR_FLUSH_ERR.
 */
public enum WcStatus {
    /** {@code IBV_WC_SUCCESS} (0): the work request completed. */
    SUCCESS("IBV_WC_SUCCESS", "success", "The operation completed.", "Nothing to do."),
    /**
     * {@code IBV_WC_LOC_LEN_ERR} (1): a message did not fit the posted receive buffers, or a send exceeded a length limit.
     */
    LOC_LEN_ERR(
            "IBV_WC_LOC_LEN_ERR",
            "local length error",
            "A length was wrong on this side: an incoming message did not fit the posted receive buffers, "
                    + "or a send was longer than the port's maximum message size or the inline limit.",
            "Check the MR and SGE lengths: post receive buffers at least as large as the largest message the peer sends."),
    /** {@code IBV_WC_LOC_QP_OP_ERR} (2): the request is not possible on this QP (opcode, SGE count or state). */
    LOC_QP_OP_ERR(
            "IBV_WC_LOC_QP_OP_ERR",
            "local QP operation error",
            "The work request could not be executed on this queue pair: an opcode the QP type does not support, "
                    + "too many SGEs, or the QP was not in a state that allows the operation.",
            "Check the QP state transitions (RESET->INIT->RTR->RTS before sending), the QP type and the opcode, and num_sge against max_send_sge."),
    /** {@code IBV_WC_LOC_EEC_OP_ERR} (3): an EE context error (reliable datagram only). */
    LOC_EEC_OP_ERR(
            "IBV_WC_LOC_EEC_OP_ERR",
            "local EE context operation error",
            "An internal error of the end-to-end context (reliable datagram only).",
            "Reliable datagram is not used by jrdma; report it with the device and driver version."),
    /**
     * {@code IBV_WC_LOC_PROT_ERR} (4): a local buffer is not covered by a valid memory region of the QP's PD with the rights
     * needed.
     */
    LOC_PROT_ERR(
            "IBV_WC_LOC_PROT_ERR",
            "local protection error",
            "A local buffer was not covered by a valid memory region: wrong lkey, address or length outside the MR, "
                    + "an MR of another protection domain, or missing LOCAL_WRITE for a buffer the adapter writes.",
            "Check each SGE's lkey, address and length against its MR, that the MR and QP share a PD, and that receive/READ targets have LOCAL_WRITE."),
    /**
     * {@code IBV_WC_WR_FLUSH_ERR} (5): not executed because the QP was in the error state; an earlier completion tells why.
     */
    WR_FLUSH_ERR(
            "IBV_WC_WR_FLUSH_ERR",
            "Work Request Flushed Error",
            "The work request was not executed because the QP entered the error state (an earlier error, or a move to ERR).",
            "Look at the first completion with another status: it is the cause. To reuse the connection, reset the QP and connect again."),
    /** {@code IBV_WC_MW_BIND_ERR} (6): a memory window bind failed. */
    MW_BIND_ERR(
            "IBV_WC_MW_BIND_ERR",
            "memory management operation error",
            "A memory window bind failed: the MR lacks MW_BIND, the range is outside the MR, the window and MR are in different PDs, "
                    + "the access rights exceed the MR's, or a type 2 window was already bound.",
            "Register the MR with Access.MW_BIND, bind a range inside it with rights the MR grants, and invalidate a type 2 window before rebinding."),
    /** {@code IBV_WC_BAD_RESP_ERR} (7): the responder answered with an unexpected opcode, length or packet. */
    BAD_RESP_ERR(
            "IBV_WC_BAD_RESP_ERR",
            "bad response error",
            "The responder answered with an unexpected opcode, length or packet.",
            "A protocol error between the two ends: check both run compatible software/firmware, and capture the traffic (UDP port 4791)."),
    /** {@code IBV_WC_LOC_ACCESS_ERR} (8): a protection error on a local buffer that incoming data was written to. */
    LOC_ACCESS_ERR(
            "IBV_WC_LOC_ACCESS_ERR",
            "local access error",
            "A protection error on a local buffer while handling an incoming RDMA WRITE with immediate or READ response.",
            "Check the lkey and the access flags of the local MR (LOCAL_WRITE for buffers that receive data)."),
    /** {@code IBV_WC_REM_INV_REQ_ERR} (9): the responder found the request invalid. */
    REM_INV_REQ_ERR(
            "IBV_WC_REM_INV_REQ_ERR",
            "remote invalid request error",
            "The responder rejected the request as invalid: an opcode its QP does not allow, a message longer than its receive buffers, "
                    + "or a misaligned atomic address.",
            "Check the peer posted large enough receive buffers, that the remote QP grants the needed access flags, and that atomic targets are 8-byte aligned."),
    /** {@code IBV_WC_REM_ACCESS_ERR} (10): the responder refused the remote memory access (rkey, bounds or rights). */
    REM_ACCESS_ERR(
            "IBV_WC_REM_ACCESS_ERR",
            "remote access error",
            "The responder refused the remote memory access: wrong or invalidated rkey, range outside the remote MR/window, "
                    + "missing REMOTE_READ/REMOTE_WRITE/REMOTE_ATOMIC on the MR or the QP, or a different protection domain.",
            "Check the rkey, remote address and length you got from the peer, and that the peer registered the MR (and enabled its QP) with the access this operation needs."),
    /** {@code IBV_WC_REM_OP_ERR} (11): the responder could not complete the operation. */
    REM_OP_ERR(
            "IBV_WC_REM_OP_ERR",
            "remote operation error",
            "The responder could not complete the operation, for example its receive queue or memory failed.",
            "Look at the peer: its own completion queue shows the cause (often a local length or protection error there)."),
    /** {@code IBV_WC_RETRY_EXC_ERR} (12): no acknowledgement within the QP's timeout and retry count. */
    RETRY_EXC_ERR(
            "IBV_WC_RETRY_EXC_ERR",
            "transport retry counter exceeded",
            "No acknowledgement came from the peer within timeout x (retry_cnt + 1): the peer is gone, its QP is not in RTR/RTS, "
                    + "or the path (GID, QPN, MTU, port) is wrong.",
            "Check the peer process and its QP state, the exchanged QPN/GID/PSN, the network path; raise timeout/retry_cnt for slow links."),
    /**
     * {@code IBV_WC_RNR_RETRY_EXC_ERR} (13): the peer had no receive posted for longer than the RNR retry count allows.
     */
    RNR_RETRY_EXC_ERR(
            "IBV_WC_RNR_RETRY_EXC_ERR",
            "RNR retry counter exceeded",
            "The peer had no receive buffer posted (Receiver Not Ready) for longer than rnr_retry retries allowed.",
            "Make the peer post receives before the sender sends (or use credits); raise the RNR retry count (7 = retry forever) or min_rnr_timer."),
    /** {@code IBV_WC_LOC_RDD_VIOL_ERR} (14): reliable datagram domain mismatch (reliable datagram only). */
    LOC_RDD_VIOL_ERR(
            "IBV_WC_LOC_RDD_VIOL_ERR",
            "local RDD violation error",
            "The reliable datagram domain of the QP and EE context did not match (reliable datagram only).",
            "Reliable datagram is not used by jrdma; report it with the device and driver version."),
    /** {@code IBV_WC_REM_INV_RD_REQ_ERR} (15): the responder rejected a reliable datagram request. */
    REM_INV_RD_REQ_ERR(
            "IBV_WC_REM_INV_RD_REQ_ERR",
            "remote invalid RD request",
            "The responder rejected a reliable datagram request (bad Q_Key or RDD).",
            "Reliable datagram is not used by jrdma; check Q_Keys if you use one."),
    /** {@code IBV_WC_REM_ABORT_ERR} (16): the responder aborted the operation. */
    REM_ABORT_ERR(
            "IBV_WC_REM_ABORT_ERR",
            "operation aborted",
            "The responder aborted the operation.",
            "Look at the peer's completion queue and logs for the cause."),
    /** {@code IBV_WC_INV_EECN_ERR} (17): invalid EE context number (reliable datagram only). */
    INV_EECN_ERR(
            "IBV_WC_INV_EECN_ERR",
            "invalid EE context number",
            "An invalid end-to-end context number was detected (reliable datagram only).",
            "Reliable datagram is not used by jrdma; report it with the device and driver version."),
    /** {@code IBV_WC_INV_EEC_STATE_ERR} (18): EE context in an invalid state (reliable datagram only). */
    INV_EEC_STATE_ERR(
            "IBV_WC_INV_EEC_STATE_ERR",
            "invalid EE context state",
            "The end-to-end context was in an invalid state (reliable datagram only).",
            "Reliable datagram is not used by jrdma; report it with the device and driver version."),
    /** {@code IBV_WC_FATAL_ERR} (19): the adapter or its driver hit a fatal error. */
    FATAL_ERR(
            "IBV_WC_FATAL_ERR",
            "fatal error",
            "The adapter or its driver hit a fatal error.",
            "Check dmesg and the device's state (jrdma doctor); the device may need a reset or a driver reload."),
    /** {@code IBV_WC_RESP_TIMEOUT_ERR} (20): the responder did not answer in time. */
    RESP_TIMEOUT_ERR(
            "IBV_WC_RESP_TIMEOUT_ERR",
            "response timeout error",
            "The responder did not answer in time.",
            "Check the peer and the path, and raise the QP timeout."),
    /**
     * {@code IBV_WC_GENERAL_ERR} (21): an error no other status fits; {@link WorkCompletion#vendorErr} may say more.
     */
    GENERAL_ERR(
            "IBV_WC_GENERAL_ERR",
            "general error",
            "An error that fits no other status; vendor_err may say more.",
            "Check vendor_err against the device vendor's documentation and dmesg."),
    /** {@code IBV_WC_TM_ERR} (22): a tag matching error (tag-matching SRQs, unused by jrdma). */
    TM_ERR(
            "IBV_WC_TM_ERR",
            "TM error",
            "A tag matching error (tag-matching SRQ only).",
            "Check the tag-matching list operations; jrdma does not use tag matching."),
    /** {@code IBV_WC_TM_RNDV_INCOMPLETE} (23): a tag-matching rendezvous left for software (unused by jrdma). */
    TM_RNDV_INCOMPLETE(
            "IBV_WC_TM_RNDV_INCOMPLETE",
            "TM software rendezvous",
            "A tag-matching rendezvous could not be completed by hardware (tag-matching SRQ only).",
            "Complete the rendezvous in software; jrdma does not use tag matching.");

    private static final WcStatus[] BY_CODE = values();

    private final String cName;
    private final String libibverbsText;
    private final String explanation;
    private final String remedy;

    WcStatus(String cName, String libibverbsText, String explanation, String remedy) {
        this.cName = cName;
        this.libibverbsText = libibverbsText;
        this.explanation = explanation;
        this.remedy = remedy;
    }

    /** {@return the numeric {@code enum ibv_wc_status} value (the ordinal)} */
    public int code() {
        return ordinal();
    }

    /**
     * The status of a libibverbs value, without allocating.
     *
     * @param code a {@code enum ibv_wc_status} value
     * @return its status, or null for a value outside 0..23
     */
    public static WcStatus of(int code) {
        return code >= 0 && code < BY_CODE.length ? BY_CODE[code] : null;
    }

    /** {@return the C enumerator, e.g. {@code IBV_WC_REM_ACCESS_ERR}} */
    public String cName() {
        return cName;
    }

    /** {@return the text {@code ibv_wc_status_str} prints for it, e.g. "remote access error"} */
    public String text() {
        return libibverbsText;
    }

    /** {@return what happened, in a sentence or two} */
    public String explanation() {
        return explanation;
    }

    /** {@return what to check or change} */
    public String remedy() {
        return remedy;
    }

    /** {@return one paragraph for an error message or a log: the C name, the text, the meaning and the remedy} */
    public String describe() {
        return cName + " (" + libibverbsText + "): " + explanation + " What to do: " + remedy;
    }
}
