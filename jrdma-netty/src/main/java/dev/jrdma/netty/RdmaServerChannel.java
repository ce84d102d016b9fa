package dev.jrdma.netty;

import dev.jrdma.connect.Endpoint;
import dev.jrdma.connect.RdmaConnectException;
import dev.jrdma.connect.ServerEndpoint;
import io.netty.channel.AbstractServerChannel;
import io.netty.channel.ChannelPromise;
import io.netty.channel.EventLoop;
import io.netty.channel.IoEvent;
import io.netty.channel.IoRegistration;
import io.netty.channel.RecvByteBufAllocator;
import io.netty.channel.socket.ServerSocketChannel;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.time.Duration;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A Netty server channel that accepts jrdma connections: the RDMA counterpart of {@code NioServerSocketChannel}.
 * <pre>{@code
 * new ServerBootstrap().group(boss, workers).channel(RdmaServerChannel.class).childHandler(...).bind("127.0.0.1", port);
 * }</pre>
 * Binding opens a jrdma {@link ServerEndpoint} (the device that serves the address; TCP exchange or rdma_cm as its
 * {@link RdmaChannelOption#ENDPOINT_CONFIG} says). An acceptor thread runs the handshakes and hands each
 * connection to the pipeline as an {@link RdmaChannel} when the channel reads (auto-read, or {@code read()}): a
 * server channel that does not read leaves its accepted connections waiting, as a socket's backlog does. Accepted
 * channels share the server's device, buffer pool and completion thread; closing the server channel stops
 * accepting and keeps them open (the device closes with the last of them).
 */
public class RdmaServerChannel extends AbstractServerChannel implements ServerSocketChannel {
    private static final System.Logger LOG = System.getLogger(RdmaServerChannel.class.getName());
    /** How often the acceptor looks whether the channel was closed. */
    private static final Duration ACCEPT_SLICE = Duration.ofMillis(200);

    private final RdmaServerChannelConfig config = new RdmaServerChannelConfig(this);
    /** Connections accepted and not yet read into the pipeline (the acceptor adds, the event loop takes). */
    private final ConcurrentLinkedQueue<RdmaChannel> accepted = new ConcurrentLinkedQueue<>();

    private final Runnable deliverTask = this::deliverAccepted;
    private boolean readPending;
    private volatile ServerEndpoint server;
    private volatile boolean open = true;
    private volatile InetSocketAddress local;
    private final AtomicInteger children = new AtomicInteger();
    private final AtomicBoolean serverClosed = new AtomicBoolean();
    private final LoopRegistration registration = new LoopRegistration();

    /**
     * An unbound server channel; Netty's {@code ServerBootstrap} creates it from the class given to {@code channel(...)}.
     */
    public RdmaServerChannel() {}

    /** {@return the jrdma server endpoint that accepts the connections, or null before bind} */
    public ServerEndpoint serverEndpoint() {
        return server;
    }

    @Override
    public RdmaServerChannelConfig config() {
        return config;
    }

    @Override
    public boolean isOpen() {
        return open;
    }

    @Override
    public boolean isActive() {
        return open && server != null;
    }

    @Override
    public InetSocketAddress localAddress() {
        return (InetSocketAddress) super.localAddress();
    }

    /** {@return null: a server channel has no peer} */
    @Override
    public InetSocketAddress remoteAddress() {
        return null;
    }

    @Override
    protected SocketAddress localAddress0() {
        return local;
    }

    @Override
    protected boolean isCompatible(EventLoop loop) {
        return LoopRegistration.isCompatible(loop, ServerUnsafe.class);
    }

    @Override
    protected AbstractUnsafe newUnsafe() {
        return new ServerUnsafe();
    }

    @Override
    protected void doRegister(ChannelPromise promise) {
        registration.register(eventLoop(), (ServerUnsafe) unsafe(), promise);
    }

    @Override
    protected void doDeregister() {
        registration.cancel();
    }

    @Override
    protected void doBind(SocketAddress localAddress) throws RdmaConnectException {
        if (!(localAddress instanceof InetSocketAddress a)) {
            throw new java.nio.channels.UnsupportedAddressTypeException();
        }
        // on an RDMA event loop the loop drives the server's group: accepted connections complete on it
        RdmaIoHandler loop = RdmaIoHandler.current();
        ServerEndpoint s = loop != null
                ? ServerEndpoint.bindInvoked(a, config.getEndpointConfig())
                : ServerEndpoint.bind(a, config.getEndpointConfig());
        if (loop != null) loop.drive(s.group());
        local = s.localAddress();
        server = s;
        Thread.ofPlatform()
                .daemon()
                .name("jrdma-netty-accept-" + local.getPort())
                .start(() -> acceptLoop(s));
    }

    private void acceptLoop(ServerEndpoint s) {
        while (open) {
            Endpoint ep;
            try {
                ep = s.accept(ACCEPT_SLICE);
            } catch (RdmaConnectException e) {
                if (e.reason() == RdmaConnectException.Reason.TIMEOUT) continue;
                if (open)
                    LOG.log(System.Logger.Level.WARNING, "accepting on " + local + " stopped: " + e.getMessage(), e);
                return;
            } catch (RuntimeException e) {
                if (open) LOG.log(System.Logger.Level.WARNING, "accepting on " + local + " stopped: " + e, e);
                return;
            }
            children.incrementAndGet();
            RdmaChannel child;
            try {
                child = new RdmaChannel(this, ep);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "could not set up a channel for " + ep + ": " + e, e);
                RdmaChannel.CLOSER.execute(ep::close);
                childClosed();
                continue;
            }
            accepted.add(child);
            try {
                eventLoop().execute(deliverTask);
            } catch (RejectedExecutionException e) {
                accepted.remove(child);
                RdmaChannel.CLOSER.execute(() -> {
                    ep.close();
                    childClosed();
                });
                return;
            }
        }
    }

    @Override
    protected void doBeginRead() {
        readPending = true;
        deliverAccepted();
    }

    /**
     * A read of the server channel: the connections accepted so far, as many as the RecvByteBufAllocator's handle
     * allows (auto-read still on, fewer than its maximum per read), then channelReadComplete.
     */
    private void deliverAccepted() {
        if (!open) {
            closeUnread();
            return;
        }
        if (!readPending || accepted.isEmpty()) return;
        RecvByteBufAllocator.Handle handle = unsafe().recvBufAllocHandle();
        handle.reset(config);
        RdmaChannel child;
        do {
            child = accepted.poll();
            if (child == null) break;
            readPending = false;
            handle.incMessagesRead(1);
            pipeline().fireChannelRead(child);
        } while (open && handle.continueReading());
        handle.readComplete();
        pipeline().fireChannelReadComplete();
    }

    @Override
    protected void doClose() {
        open = false;
        if (children.get() == 0) closeServer();
        closeUnread();
    }

    /** Connections accepted but never read close with the server channel, as a listening socket's backlog does. */
    private void closeUnread() {
        for (RdmaChannel child; (child = accepted.poll()) != null; )
            RdmaChannel.CLOSER.execute(child.unsafe()::closeForcibly);
    }

    /** An accepted channel closed: the last one closes the device of a closed server channel. */
    void childClosed() {
        if (children.decrementAndGet() == 0 && !open) closeServer();
    }

    private void closeServer() {
        ServerEndpoint s = server;
        if (s != null && serverClosed.compareAndSet(false, true)) s.close();
    }

    @Override
    public String toString() {
        return "RdmaServerChannel[" + (local != null ? local : "unbound") + "]";
    }

    final class ServerUnsafe extends AbstractUnsafe implements RdmaIoHandle {
        @Override
        public void connect(SocketAddress remoteAddress, SocketAddress localAddress, ChannelPromise promise) {
            safeSetFailure(promise, new UnsupportedOperationException("a server channel does not connect"));
        }

        @Override
        public void handle(IoRegistration registration, IoEvent ioEvent) {
            // connections arrive from the acceptor thread as tasks
        }

        @Override
        public void closeNow() {
            close(voidPromise());
        }

        @Override
        public void close() {
            close(voidPromise());
        }
    }
}
