package dev.jrdma.bench.netty;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufHolder;
import io.netty.channel.Channel;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A timeline of what reaches a gRPC channel's pipeline from its transport, for {@link GrpcBench}: each read (its
 * bytes, when it starts and when the pipeline is done with it), each read batch's end ({@code channelReadComplete})
 * and each flush (the bytes written since the last one). It sits at the head of the pipeline, so it sees epoll's and
 * jrdma's channels alike; both processes stamp with {@link System#nanoTime()} (one clock on one host), so their
 * timelines merge into one: when a batch is flushed by one side and when the other starts reading it. Off unless
 * {@code -Djrdma.bench.grpcTrace=PREFIX} (both processes get it): each channel then writes its last
 * {@link #CAPACITY} events to {@code PREFIX.<role>.<pid>.<n>} when it closes, one line each:
 * {@code nanos kind bytes} with kind {@code R} (a read starts), {@code r} (the pipeline is done with it), {@code C}
 * (read batch complete, after the pipeline's handling) or {@code F} (a flush).
 */
final class GrpcTrace extends ChannelDuplexHandler {
    /** The file prefix, or null when tracing is off. */
    static final String PREFIX = System.getProperty("jrdma.bench.grpcTrace");
    /** Events kept per channel (the last ones: the rate phase comes last). */
    static final int CAPACITY = 1 << 20;

    private static final char[] KINDS = {'R', 'r', 'C', 'F'};
    private static final java.util.concurrent.atomic.AtomicInteger CHANNELS =
            new java.util.concurrent.atomic.AtomicInteger();

    private final String role;
    private final long[] nanos = new long[CAPACITY];
    private final int[] kinds = new int[CAPACITY];
    private final int[] bytes = new int[CAPACITY];
    private long count;
    private int written;
    private boolean dumped;

    private GrpcTrace(String role) {
        this.role = role;
    }

    /**
     * Adds a trace at the head of {@code ch}'s pipeline when tracing is on.
     *
     * @param ch   a client channel or an accepted connection
     * @param role {@code client} or {@code server}
     * @param <C>  the channel's type
     * @return {@code ch}
     */
    static <C extends Channel> C onChannel(C ch, String role) {
        if (PREFIX != null) ch.pipeline().addFirst(new GrpcTrace(role));
        return ch;
    }

    /**
     * Has every connection {@code server} accepts traced, when tracing is on.
     *
     * @param server a server channel, before it is registered
     * @param <C>    its type
     * @return {@code server}
     */
    static <C extends Channel> C onServer(C server) {
        if (PREFIX != null) {
            server.pipeline().addFirst(new ChannelInboundHandlerAdapter() {
                @Override
                public void channelRead(ChannelHandlerContext ctx, Object child) {
                    if (child instanceof Channel c) c.pipeline().addFirst(new GrpcTrace("server"));
                    ctx.fireChannelRead(child);
                }
            });
        }
        return server;
    }

    private void add(int kind, int n) {
        int i = (int) (count++ & (CAPACITY - 1));
        nanos[i] = System.nanoTime();
        kinds[i] = kind;
        bytes[i] = n;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        add(0, msg instanceof ByteBuf b ? b.readableBytes() : -1);
        ctx.fireChannelRead(msg);
        add(1, 0);
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        ctx.fireChannelReadComplete();
        add(2, 0);
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        if (msg instanceof ByteBuf b) written += b.readableBytes();
        else if (msg instanceof ByteBufHolder h) written += h.content().readableBytes();
        ctx.write(msg, promise);
    }

    @Override
    public void flush(ChannelHandlerContext ctx) {
        add(3, written);
        written = 0;
        ctx.flush();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        dump();
        ctx.fireChannelInactive();
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        dump();
    }

    private void dump() {
        if (dumped || count == 0) return;
        dumped = true;
        Path file =
                Path.of(PREFIX + "." + role + "." + ProcessHandle.current().pid() + "." + CHANNELS.incrementAndGet());
        long first = Math.max(0, count - CAPACITY);
        try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(file, StandardCharsets.US_ASCII))) {
            for (long k = first; k < count; k++) {
                int i = (int) (k & (CAPACITY - 1));
                w.print(nanos[i]);
                w.print(' ');
                w.print(KINDS[kinds[i]]);
                w.print(' ');
                w.println(bytes[i]);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
