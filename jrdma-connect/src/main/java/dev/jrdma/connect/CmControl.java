package dev.jrdma.connect;

import java.lang.foreign.MemorySegment;
import java.net.SocketAddress;

/**
 * rdma_cm as the control channel: goodbye = {@code rdma_disconnect} (DREQ), its acknowledgement = the peer's
 * {@code rdma_disconnect} (DREP); a DISCONNECTED event is the peer's goodbye, or the answer to ours.
 */
final class CmControl implements Control {
    private final MemorySegment id;
    private final RdmaCm.Channel channel;
    private final SocketAddress remote;
    private volatile boolean byeSent, disconnected, closed;
    private Thread thread;

    CmControl(MemorySegment id, RdmaCm.Channel channel, SocketAddress remote) {
        this.id = id;
        this.channel = channel;
        this.remote = remote;
    }

    @Override
    public SocketAddress remoteAddress() {
        return remote;
    }

    private synchronized void disconnect() {
        if (disconnected || closed) return;
        disconnected = true;
        try {
            RdmaCm.call("rdma_disconnect", RdmaCm.DISCONNECT, id);
        } catch (RdmaCm.CmException ignored) {
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
        thread = Thread.ofPlatform().daemon().name("jrdma-cm-events-" + ep.qpNum()).start(() -> {
            boolean told = false;
            while (!closed) {
                RdmaCm.Event e;
                try {
                    e = channel.next(100);
                } catch (RdmaCm.CmException ex) {
                    if (!closed && !told) ep.peerLost();
                    break;
                }
                if (e == null) continue;
                if (e.type() == RdmaCm.EV_DISCONNECTED) {
                    ep.peerAcked();
                    if (!byeSent && !told) {
                        told = true;
                        if (e.status() == 0) ep.peerBye(); else ep.peerLost();
                    }
                } else if (e.type() == RdmaCm.EV_DEVICE_REMOVAL && !told) {
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
        try {
            RdmaCm.call("rdma_destroy_id", RdmaCm.DESTROY_ID, id);
        } catch (RdmaCm.CmException ignored) {
            // gone already
        }
        channel.close();
    }
}
