package dev.jrdma.netty;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A server that writes its last message and closes when the write's promise completes (HTTP's
 * {@code Connection: close}, {@code ChannelFutureListener.CLOSE}): the peer must get the message, then the end of
 * the stream. The write's promise completes once the send is posted on the endpoint's owner (the event loop); the
 * endpoint's close is a command that owner runs after it, whether it is called there (in the listener) or on the
 * channel's closer thread, and its goodbye waits for the send's completion. So the order is by construction, not by
 * timing: every round of the second test takes the same path (before the owner-only data path, a close on the event
 * loop said goodbye at once, with the send still in flight).
 */
class CloseAfterWriteTest {
    static {
        NettyTestSupport.config();
    }

    private static EventLoopGroup group;

    @BeforeAll
    static void start() {
        group = new RdmaEventLoopGroup(2);
    }

    @AfterAll
    static void stop() {
        NettyTestSupport.shutdown(group);
    }

    /** A server whose accepted channels write "goodbye" at once and let {@code onWritten} close them. */
    private static Channel server(BiConsumer<ChannelHandlerContext, io.netty.channel.ChannelFuture> onWritten)
            throws Exception {
        return new ServerBootstrap()
                .group(group)
                .channel(RdmaServerChannel.class)
                .childHandler(new ChannelInboundHandlerAdapter() {
                    @Override
                    public void channelActive(ChannelHandlerContext ctx) {
                        // as HTTP's handler does: write, listen, and flush later (the listener runs inside the flush)
                        io.netty.channel.ChannelFuture f =
                                ctx.write(Unpooled.copiedBuffer("goodbye", StandardCharsets.US_ASCII));
                        onWritten.accept(ctx, f);
                        ctx.flush();
                    }

                    @Override
                    public boolean isSharable() {
                        return true;
                    }
                })
                .bind(NettyTestSupport.host(), 0)
                .sync()
                .channel();
    }

    /** Connects, and returns what the client read before its channel closed. */
    private static String readUntilClosed(Channel server) throws Exception {
        int port = ((InetSocketAddress) server.localAddress()).getPort();
        LinkedBlockingQueue<String> got = new LinkedBlockingQueue<>();
        StringBuilder text = new StringBuilder();
        Channel client = new Bootstrap()
                .group(group)
                .channel(RdmaChannel.class)
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, NettyTestSupport.connectTimeoutMillis())
                .handler(new ChannelInboundHandlerAdapter() {
                    @Override
                    public void channelRead(ChannelHandlerContext ctx, Object msg) {
                        text.append(((ByteBuf) msg).toString(StandardCharsets.US_ASCII));
                        ((ByteBuf) msg).release();
                    }

                    @Override
                    public void channelInactive(ChannelHandlerContext ctx) {
                        got.add(text.toString());
                    }

                    @Override
                    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
                        text.append("[").append(cause).append("]");
                    }
                })
                .connect(NettyTestSupport.host(), port)
                .sync()
                .channel();
        String s = got.poll(20, TimeUnit.SECONDS);
        client.close().sync();
        return s;
    }

    @Test
    void aCloseThatOvertakesTheEventLoopStillSendsWhatWasWritten() throws Exception {
        // the worst case of the race, made certain: the endpoint closes the moment the write's promise completes
        Channel server = server((ctx, f) ->
                f.addListener(done -> ((RdmaChannel) ctx.channel()).endpoint().close()));
        try {
            assertEquals("goodbye", readUntilClosed(server));
        } finally {
            server.close().sync();
        }
    }

    @Test
    void closeOnWriteCompletionNeverLosesTheLastMessage() throws Exception {
        Channel server = server((ctx, f) -> f.addListener(ChannelFutureListener.CLOSE));
        try {
            int rounds = Integer.getInteger("jrdma.netty.test.closeRounds", 40);
            for (int i = 0; i < rounds; i++) assertEquals("goodbye", readUntilClosed(server), "connection " + i);
        } finally {
            server.close().sync();
        }
    }
}
