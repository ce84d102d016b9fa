package dev.jrdma.netty;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.FixedRecvByteBufAllocator;
import java.io.ByteArrayOutputStream;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A read hands the loop's tasks their turn ({@link ChannelReads#yieldToTasks}, on by default): a task the pipeline gives its loop
 * while it reads a large message runs before the rest of that message is read (gRPC's flush of the answers to the
 * first requests of a batch), and the message still reaches the pipeline whole and in order.
 */
class ReadYieldTest {
    static {
        NettyTestSupport.init();
    }

    private static final int MESSAGE = 4096;
    /** The server's loop and the client's: no task of the client's lands on the loop whose reads are watched. */
    private static EventLoopGroup serverLoop, clientLoop;

    @BeforeAll
    static void start() {
        serverLoop = new RdmaEventLoopGroup(1);
        clientLoop = new RdmaEventLoopGroup(1);
    }

    @AfterAll
    static void stop() {
        NettyTestSupport.shutdown(serverLoop, clientLoop);
    }

    /**
     * Sends {@code messages} messages of {@link #MESSAGE} bytes each (the bytes 0, 1, 2, ...), one after the other's
     * reading, to a server whose child runs {@code reader} with reads of at most {@code readSize} bytes (0: the default
     * allocator), and checks that they arrive whole and in order.
     */
    private static void send(int messages, Reader reader, int readSize) throws Exception {
        ServerBootstrap sb = new ServerBootstrap()
                .group(serverLoop)
                .channel(RdmaServerChannel.class)
                .childHandler(reader);
        if (readSize > 0)
            sb.childOption(
                    ChannelOption.RCVBUF_ALLOCATOR, new FixedRecvByteBufAllocator(readSize).maxMessagesPerRead(16));
        Channel server = sb.bind(NettyTestSupport.host(), 0).sync().channel();
        Channel client = null;
        try {
            client = new Bootstrap()
                    .group(clientLoop)
                    .channel(RdmaChannel.class)
                    .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, NettyTestSupport.connectTimeoutMillis())
                    .handler(new ChannelInboundHandlerAdapter())
                    .connect(NettyTestSupport.host(), ((InetSocketAddress) server.localAddress()).getPort())
                    .sync()
                    .channel();
            for (int m = 0; m < messages; m++) {
                byte[] bytes = new byte[MESSAGE];
                for (int i = 0; i < bytes.length; i++) bytes[i] = (byte) i;
                // a heap buffer: copied into the send ring and sent as one message
                client.writeAndFlush(Unpooled.wrappedBuffer(bytes)).sync();
                byte[] got = reader.messages.poll(NettyTestSupport.patienceSeconds(), TimeUnit.SECONDS);
                assertNotNull(got, "message " + m + " was not read");
                for (int i = 0; i < got.length; i++) assertEquals((byte) i, got[i], "byte " + i + " of message " + m);
            }
        } finally {
            if (client != null) client.close().sync();
            server.close().sync();
        }
    }

    /**
     * Collects the messages it reads; with {@code giveTasks}, gives its loop a task at the first piece of each (as
     * gRPC's WriteQueue schedules its flush), which notes how much of the message was read when it ran.
     */
    private static final class Reader extends ChannelInboundHandlerAdapter {
        final LinkedBlockingQueue<byte[]> messages = new LinkedBlockingQueue<>();
        /** For each message, the bytes of it read when the task given at its first piece ran (from its start). */
        final LinkedBlockingQueue<Integer> readWhenTaskRan = new LinkedBlockingQueue<>();
        /** For each message, the read operations (channelReadComplete) that delivered a piece of it. */
        final List<Integer> readOperations = new ArrayList<>();

        private final boolean giveTasks;
        private final ByteArrayOutputStream message = new ByteArrayOutputStream();
        private int operations;
        /** The bytes read so far, over every message. */
        private long total;

        Reader(boolean giveTasks) {
            this.giveTasks = giveTasks;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ByteBuf b = (ByteBuf) msg;
            try {
                boolean first = message.size() == 0;
                byte[] piece = new byte[b.readableBytes()];
                b.readBytes(piece);
                long start = total;
                total += piece.length;
                message.writeBytes(piece);
                if (first && giveTasks) {
                    ctx.channel().eventLoop().execute(() -> readWhenTaskRan.add((int) (total - start)));
                }
            } finally {
                b.release();
            }
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            if (message.size() == 0) return;
            operations++;
            if (message.size() >= MESSAGE) {
                readOperations.add(operations);
                operations = 0;
                messages.add(message.toByteArray());
                message.reset();
            }
        }
    }

    /** Runs {@code body} with {@link ChannelReads#yieldToTasks} set to {@code on}, then puts it back. */
    private static void withYield(boolean on, ThrowingRunnable body) throws Exception {
        boolean before = ChannelReads.yieldToTasks;
        ChannelReads.yieldToTasks = on;
        try {
            body.run();
        } finally {
            ChannelReads.yieldToTasks = before;
        }
    }

    private interface ThrowingRunnable {
        void run() throws Exception;
    }

    /** The bytes of each of the two messages that were read when the task given at its first piece ran. */
    private static List<Integer> readWhenTasksRan(Reader reader) throws InterruptedException {
        List<Integer> read = new ArrayList<>();
        for (int m = 0; m < 2; m++) {
            Integer r = reader.readWhenTaskRan.poll(NettyTestSupport.patienceSeconds(), TimeUnit.SECONDS);
            assertNotNull(r, "the task given at message " + m + " did not run");
            read.add(r);
        }
        return read;
    }

    @Test
    void withTheYieldATaskGivenWhileReadingRunsBeforeTheRestOfTheMessageIsRead() throws Exception {
        withYield(true, () -> {
            Reader reader = new Reader(true);
            send(2, reader, 8192);
            // the first message: one piece of the allocator's 8192 bytes, read before the task ran; this pipeline
            // gives tasks when it reads, so the second message's first piece is small, and the read ends there
            assertEquals(List.of(MESSAGE, ChannelReads.FIRST_READ_BYTES), readWhenTasksRan(reader));
            assertTrue(reader.readOperations.get(1) > 1, "the rest came in read operations after the task");
        });
    }

    /**
     * Sends {@code messages} messages of {@code size} bytes to a server child that reads nothing until all of them
     * have arrived, then turns auto-read on; its pipeline gives the loop a task at every read. Returns the bytes of
     * each read operation, in order.
     */
    private static List<Integer> readOperationsOfWaitingMessages(int messages, int size) throws Exception {
        CompletableFuture<Channel> child = new CompletableFuture<>();
        CompletableFuture<List<Integer>> operations = new CompletableFuture<>();
        Channel server = new ServerBootstrap()
                .group(serverLoop)
                .channel(RdmaServerChannel.class)
                .childOption(ChannelOption.AUTO_READ, false)
                .childHandler(new ChannelInboundHandlerAdapter() {
                    private final List<Integer> done = new ArrayList<>();
                    private int bytes, total;

                    @Override
                    public void channelActive(ChannelHandlerContext ctx) {
                        child.complete(ctx.channel());
                    }

                    @Override
                    public void channelRead(ChannelHandlerContext ctx, Object msg) {
                        ByteBuf b = (ByteBuf) msg;
                        bytes += b.readableBytes();
                        b.release();
                        ctx.channel().eventLoop().execute(() -> {}); // as gRPC's WriteQueue schedules its flush
                    }

                    @Override
                    public void channelReadComplete(ChannelHandlerContext ctx) {
                        if (bytes == 0) return;
                        done.add(bytes);
                        total += bytes;
                        bytes = 0;
                        if (total >= messages * size) operations.complete(List.copyOf(done));
                    }
                })
                .bind(NettyTestSupport.host(), 0)
                .sync()
                .channel();
        Channel client = null;
        try {
            client = new Bootstrap()
                    .group(clientLoop)
                    .channel(RdmaChannel.class)
                    .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, NettyTestSupport.connectTimeoutMillis())
                    .handler(new ChannelInboundHandlerAdapter())
                    .connect(NettyTestSupport.host(), ((InetSocketAddress) server.localAddress()).getPort())
                    .sync()
                    .channel();
            for (int m = 0; m < messages; m++)
                client.writeAndFlush(Unpooled.wrappedBuffer(new byte[size])).sync();
            RdmaChannel reader = (RdmaChannel) child.get(NettyTestSupport.patienceSeconds(), TimeUnit.SECONDS);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(NettyTestSupport.patienceSeconds());
            while (reader.messagesWaiting() < messages) {
                assertTrue(System.nanoTime() - deadline < 0, "only " + reader.messagesWaiting() + " messages arrived");
                Thread.onSpinWait();
            }
            reader.config().setAutoRead(true);
            return operations.get(NettyTestSupport.patienceSeconds(), TimeUnit.SECONDS);
        } finally {
            if (client != null) client.close().sync();
            server.close().sync();
        }
    }

    @Test
    void withTheYieldAfterBytesMessagesAlreadyReceivedAreReadTogetherUntilThatManyBytesThenTheTasksRun()
            throws Exception {
        int before = ChannelReads.yieldAfterBytes;
        ChannelReads.yieldAfterBytes = 1024;
        try {
            withYield(true, () -> {
                int size = 200, messages = 8;
                int perOperation = (1024 + size - 1) / size; // the message that reaches 1024 bytes ends the operation
                assertTrue(perOperation < messages, "the test needs more messages than one read operation takes");
                assertEquals(
                        List.of(perOperation * size, (messages - perOperation) * size),
                        readOperationsOfWaitingMessages(messages, size));
            });
        } finally {
            ChannelReads.yieldAfterBytes = before;
        }
    }

    @Test
    void withTheYieldMessageByMessageEachMessageThatGaveATaskEndsItsReadOperation() throws Exception {
        int before = ChannelReads.yieldAfterBytes;
        ChannelReads.yieldAfterBytes = 0;
        try {
            withYield(true, () -> assertEquals(List.of(200, 200, 200), readOperationsOfWaitingMessages(3, 200)));
        } finally {
            ChannelReads.yieldAfterBytes = before;
        }
    }

    @Test
    void withoutTheYieldTheWholeMessageIsReadBeforeTheTaskRuns() throws Exception {
        withYield(false, () -> {
            Reader reader = new Reader(true);
            send(2, reader, 8192);
            assertEquals(List.of(MESSAGE, MESSAGE), readWhenTasksRan(reader));
            assertEquals(List.of(1, 1), reader.readOperations, "read operations per message");
        });
    }

    @Test
    void withTheYieldAPipelineThatGivesNoTaskReadsAMessageInPiecesOfTheGuessInOneReadOperation() throws Exception {
        withYield(true, () -> {
            Reader reader = new Reader(false);
            send(2, reader, 1000);
            assertEquals(List.of(1, 1), reader.readOperations, "read operations per message");
        });
    }
}
