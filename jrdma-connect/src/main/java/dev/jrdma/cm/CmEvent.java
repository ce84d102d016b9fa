package dev.jrdma.cm;

import dev.jrdma.verbs.AhAttr;

/**
 * One rdma_cm event, copied out of librdmacm's {@code struct rdma_cm_event} (which is acknowledged at once, so an
 * id can always be destroyed). For a {@link CmEventType#CONNECT_REQUEST} {@link #id} is the new connection's id and
 * {@link #listenId} the listener's.
 *
 * <p>The connection parameters ({@link #responderResources} to {@link #qpNum}) are the peer's, from the CM message
 * (REQ/REP) of a reliable-connected id. For an id of a datagram port space the event instead carries
 * {@link #ah}, {@link #qpNum} and {@link #qkey}: where to send datagrams (set on ESTABLISHED after a UD connect).
 *
 * @param type the event
 * @param status 0 on success; a negative errno for errors; for {@link CmEventType#REJECTED} the IB CM reject reason
 * @param id the id the event is for
 * @param listenId the listening id of a connection request, else null
 * @param privateData the peer's private data (empty when none); may have trailing zeros the CM message padded
 * @param responderResources the peer's responder resources (RC)
 * @param initiatorDepth the peer's initiator depth (RC)
 * @param retryCount the peer's retry count (RC)
 * @param rnrRetryCount the peer's RNR retry count (RC)
 * @param srq whether the peer's QP uses an SRQ (RC)
 * @param qpNum the peer's QP number
 * @param ah for datagram ids: the address handle attributes that reach the peer, else null
 * @param qkey for datagram ids: the peer's Q_Key
 */
public record CmEvent(
        CmEventType type,
        int status,
        CmId id,
        CmId listenId,
        byte[] privateData,
        int responderResources,
        int initiatorDepth,
        int retryCount,
        int rnrRetryCount,
        boolean srq,
        int qpNum,
        AhAttr ah,
        int qkey) {

    /** IB CM reject reason 28: the consumer (the peer's application) rejected, see its private data. */
    public static final int REJECT_CONSUMER_DEFINED = 28;
    /** IB CM reject reason 8: nothing listens on that service ID (port). */
    public static final int REJECT_INVALID_SERVICE_ID = 8;

    /** {@return whether the event reports success (status 0)} */
    public boolean isSuccess() {
        return status == 0;
    }

    /**
     * {@return the status in words: "success", the errno's name and meaning, or for a {@link CmEventType#REJECTED}
     * event the IB CM reject reason}
     */
    public String statusText() {
        if (status == 0) return "success";
        if (type == CmEventType.REJECTED) {
            return switch (status) {
                case REJECT_INVALID_SERVICE_ID -> "reject reason 8, invalid service ID: nothing listens on that port";
                case REJECT_CONSUMER_DEFINED -> "reject reason 28, consumer defined: the peer's application rejected";
                default -> "reject reason " + status;
            };
        }
        return status < 0 ? CmException.errnoName(-status) : "status " + status;
    }

    @Override
    public String toString() {
        return type.cName() + " (" + statusText() + ")"
                + (privateData.length > 0 ? ", " + privateData.length + " B private data" : "")
                + (qpNum != 0 ? ", peer QPN 0x" + Integer.toHexString(qpNum) : "");
    }
}
