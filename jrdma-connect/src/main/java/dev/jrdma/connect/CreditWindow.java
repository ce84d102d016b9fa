package dev.jrdma.connect;

/**
 * Credit flow control of one connection, both ways. Each side pre-posts receive buffers and grants the peer one
 * credit per buffer; a message that lands in a buffer (SEND, WRITE with immediate) uses a credit. A side returns
 * credits when its application has taken messages, riding on its next send or, when none comes soon, in a
 * message of its own. So a sender never sends into an empty receive queue (it waits for a credit instead of
 * causing an RNR), and a receiver never holds more messages than it granted. The endpoint's owner thread alone uses it.
 */
final class CreditWindow {
    /** The most credits one message returns (16 bits of its immediate data). */
    static final int MAX_RETURN = 0xFFFF;

    private final int granted;
    private final int updateThreshold;
    private int sendCredits; // the peer's free receive buffers for this side's messages
    private int toReturn; // buffers the application freed that the peer does not know of yet
    private int peerCredits; // what the peer may still send: credits granted or returned, not yet used

    /** A window that grants the peer {@code granted} credits (this side's receive queue depth for data). */
    CreditWindow(int granted) {
        if (granted < 1) throw new IllegalArgumentException("at least one credit must be granted, not " + granted);
        this.granted = granted;
        this.updateThreshold = Math.max(1, (granted + 1) / 2);
    }

    /** The handshake: the peer granted {@code peerGranted} credits, and holds this side's initial grant. */
    void open(int peerGranted) {
        sendCredits += peerGranted;
        peerCredits += granted;
    }

    int sendCredits() {
        return sendCredits;
    }

    boolean canSend() {
        return sendCredits > 0;
    }

    /** A message that uses one of the peer's buffers was posted. */
    void used() {
        sendCredits--;
    }

    /** The peer returned {@code n} credits (on a message or alone). */
    void returned(int n) {
        sendCredits += n;
    }

    /**
     * A message from the peer arrived in one of this side's buffers: true when it had a credit for it. False: it
     * ignores flow control (it has sent more than it was granted).
     */
    boolean arrived() {
        if (peerCredits <= 0) return false;
        peerCredits--;
        return true;
    }

    /** The application took a message: its buffer is free for the peer again. */
    void consumed() {
        toReturn++;
    }

    /** Credits to put on the next message (its immediate data carries at most {@link #MAX_RETURN}). */
    int toPiggyback() {
        return Math.min(toReturn, MAX_RETURN);
    }

    /** {@code n} credits went out on a message. */
    void gaveBack(int n) {
        toReturn -= n;
        peerCredits += n;
    }

    /**
     * Whether to send credits in a message of their own: there are credits to return, no send that could carry
     * them is about to go ({@code sendSoon}), and either half the grant is waiting or the peer has none left.
     */
    boolean needsUpdate(boolean sendSoon) {
        if (toReturn <= 0 || sendSoon) return false;
        return toReturn >= updateThreshold || peerCredits <= 0;
    }

    int granted() {
        return granted;
    }

    @Override
    public String toString() {
        return "CreditWindow[send " + sendCredits + ", to return " + toReturn + ", peer holds " + peerCredits + " of "
                + granted + "]";
    }
}
