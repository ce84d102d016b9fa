package dev.jrdma.connect;

import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.SocketAddress;

/**
 * The out-of-band TCP connection kept after the handshake: 'B' goodbye, 'A' acknowledgement, end of stream = gone.
 * That is all it carries, so it has a budget: a peer that sends any other byte, or more than {@link #BUDGET} bytes in
 * the connection's life, is disconnected, its endpoint ends with PROTOCOL_ERROR, and its group counts it
 * ({@link EndpointGroup#controlViolations()}): junk cannot keep a thread of this side reading.
 */
final class TcpControl implements Control {
    /** The most bytes a peer may send on the control channel: a goodbye and its acknowledgement need two. */
    static final int BUDGET = 8;

    private final Socket socket;
    private final DataOutputStream out;

    private final java.time.Duration timeout;

    TcpControl(Socket socket, DataOutputStream out, java.time.Duration timeout) {
        this.socket = socket;
        this.out = out;
        this.timeout = timeout;
    }

    @Override
    public SocketAddress remoteAddress() {
        return socket.getRemoteSocketAddress();
    }

    @Override
    public SocketAddress localAddress() {
        return socket.getLocalSocketAddress();
    }

    private synchronized void write(int b) {
        try {
            out.writeByte(b);
            out.flush();
        } catch (IOException ignored) {
            // the peer is gone already; the monitor reports it
        }
    }

    @Override
    public void bye() {
        write(Endpoint.BYE);
    }

    @Override
    public void byeAck() {
        write(Endpoint.BYE_ACK);
    }

    @Override
    public void start(Endpoint ep) {
        try {
            socket.setSoTimeout(0);
        } catch (IOException ignored) {
            // the monitor will notice
        }
        // a host that vanishes without a FIN: TCP keepalive probes, scaled to the timeout, end the stream
        try {
            int idle = (int) Math.max(1, timeout.toSeconds() / 2);
            socket.setKeepAlive(true);
            socket.setOption(jdk.net.ExtendedSocketOptions.TCP_KEEPIDLE, idle);
            socket.setOption(jdk.net.ExtendedSocketOptions.TCP_KEEPINTERVAL, 1);
            socket.setOption(jdk.net.ExtendedSocketOptions.TCP_KEEPCOUNT, 3);
        } catch (IOException | UnsupportedOperationException ignored) {
            // keepalive tuning is best effort
        }
        Thread.ofVirtual().name("jrdma-peer-monitor-" + ep.qpNum()).start(() -> monitor(ep));
    }

    private void monitor(Endpoint ep) {
        boolean bye = false;
        String violation = null;
        try {
            InputStream in = socket.getInputStream();
            byte[] buf = new byte[BUDGET + 1];
            int total = 0, n;
            read:
            while ((n = in.read(buf)) > 0) {
                total += n;
                for (int i = 0; i < n; i++) {
                    int b = buf[i] & 0xFF;
                    if (b == Endpoint.BYE) {
                        if (!bye) ep.peerBye();
                        bye = true;
                    } else if (b == Endpoint.BYE_ACK) {
                        ep.peerAcked();
                    } else {
                        violation = String.format(
                                "sent 0x%02x on the control channel, which carries only a goodbye and its acknowledgement",
                                b);
                        break read;
                    }
                }
                if (total > BUDGET) {
                    violation = "sent " + total + " bytes on the control channel, more than its budget of " + BUDGET;
                    break;
                }
            }
        } catch (IOException e) {
            // connection lost
        }
        if (violation != null) {
            close(); // disconnected: nothing more is read from it
            ep.group().countControlViolation();
            String what = "the peer at " + remoteAddress() + " " + violation + ": disconnected";
            System.getLogger(TcpControl.class.getName()).log(System.Logger.Level.WARNING, what);
            ep.controlViolation(what);
        }
        ep.peerAcked();
        if (!bye && violation == null) ep.peerLost();
    }

    @Override
    public void close() {
        try {
            socket.close();
        } catch (IOException ignored) {
            // closing anyway
        }
    }
}
