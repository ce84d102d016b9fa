package dev.jrdma.connect;

import dev.jrdma.cm.CmEvent;
import dev.jrdma.cm.CmEventType;
import dev.jrdma.cm.CmException;
import dev.jrdma.cm.CmId;
import java.net.SocketAddress;

/**
 * rdma_cm as the control channel: goodbye = {@code rdma_disconnect} (DREQ), its acknowledgement = the peer's
 * {@code rdma_disconnect} (DREP); a DISCONNECTED event is the peer's goodbye, or the answer to ours.
 */
final class CmControl implements Control {
    private final CmId id;
    private final SocketAddress remote;
    private volatile boolean byeSent, disconnected, closed;
    private Thread thread;

    /** {@code id}: a connected id with a channel of its own (the control closes both). */
    CmControl(CmId id, SocketAddress remote) {
        this.id = id;
        this.remote = remote;
    }

    @Override
    public SocketAddress remoteAddress() {
        return remote;
    }

    @Override
    public SocketAddress localAddress() {
        return id.localAddress();
    }

    private synchronized void disconnect() {
        if (disconnected || closed) return;
        disconnected = true;
        try {
            id.disconnect();
        } catch (CmException ignored) {
            // already disconnected
        }
    }

    @Override
    public void bye() {
        byeSent = true;
        disconnect();
    }

    @Override
    public void byeAck() {
        disconnect();
    }

    @Override
    public void start(Endpoint ep) {
        thread = Thread.ofPlatform()
                .daemon()
                .name("jrdma-cm-events-" + ep.qpNum())
                .start(() -> {
                    boolean told = false;
                    while (!closed) {
                        CmEvent e;
                        try {
                            e = id.channel().next(100);
                        } catch (CmException ex) {
                            if (!closed && !told) ep.peerLost();
                            break;
                        }
                        if (e == null) continue;
                        if (e.type() == CmEventType.DISCONNECTED) {
                            ep.peerAcked();
                            if (!byeSent && !told) {
                                told = true;
                                if (e.status() == 0) ep.peerBye();
                                else ep.peerLost();
                            }
                        } else if (e.type() == CmEventType.DEVICE_REMOVAL && !told) {
                            told = true;
                            ep.peerAcked();
                            ep.peerLost();
                        }
                    }
                });
    }

    @Override
    public void close() {
        if (closed) return;
        closed = true;
        if (thread != null && Thread.currentThread() != thread) {
            try {
                thread.join(1000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        id.close();
        id.channel().close();
    }
}
