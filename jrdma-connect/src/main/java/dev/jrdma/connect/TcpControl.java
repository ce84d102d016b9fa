package dev.jrdma.connect;

import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.SocketAddress;

/** The out-of-band TCP connection kept after the handshake: 'B' goodbye, 'A' acknowledgement, end of stream = gone. */
final class TcpControl implements Control {
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
        try {
            InputStream in = socket.getInputStream();
            int b;
            while ((b = in.read()) >= 0) {
                if (b == Endpoint.BYE && !bye) {
                    bye = true;
                    ep.peerBye();
                } else if (b == Endpoint.BYE_ACK) {
                    ep.peerAcked();
                }
            }
        } catch (IOException e) {
            // connection lost
        }
        ep.peerAcked();
        if (!bye) ep.peerLost();
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
