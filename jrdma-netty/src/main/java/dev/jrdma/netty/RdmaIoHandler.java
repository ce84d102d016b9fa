package dev.jrdma.netty;

import io.netty.channel.IoHandle;
import io.netty.channel.IoHandler;
import io.netty.channel.IoHandlerContext;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.IoOps;
import io.netty.channel.IoRegistration;
import io.netty.util.concurrent.ThreadAwareExecutor;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;

/**
 * The I/O handler of an event loop that serves jrdma channels ({@link RdmaEventLoopGroup}, or
 * {@code new MultiThreadIoEventLoopGroup(RdmaIoHandler.newFactory())}).
 *
 * <p>An RDMA channel has nothing to select: the endpoint group's completion thread polls the completion queue and
 * submits the results to the channel's event loop as tasks. So this handler only parks the loop until a task or a
 * timer is due ({@link #wakeup()} unparks it), and keeps the registered channels so that a loop shutting down can
 * close them.
 */
public final class RdmaIoHandler implements IoHandler {
    private final Set<RdmaIoHandle> handles = new HashSet<>();
    private final ThreadAwareExecutor executor;
    private volatile Thread loopThread;

    private RdmaIoHandler(ThreadAwareExecutor executor) {
        this.executor = executor;
    }

    /**
     * {@return a factory of RDMA I/O handlers for a {@link io.netty.channel.MultiThreadIoEventLoopGroup}: one handler per
     * event loop}
     */
    public static IoHandlerFactory newFactory() {
        return RdmaIoHandler::new;
    }

    @Override
    public int run(IoHandlerContext context) {
        if (loopThread == null) loopThread = Thread.currentThread();
        if (context.canBlock()) {
            // nothing to poll here: sleep until a task arrives (wakeup) or the next timer is due
            LockSupport.parkNanos(this, context.delayNanos(System.nanoTime()));
        }
        if (context.shouldReportActiveIoTime()) context.reportActiveIoTime(0);
        return 0;
    }

    @Override
    public void wakeup() {
        if (!executor.isExecutorThread(Thread.currentThread())) {
            Thread t = loopThread;
            if (t != null) LockSupport.unpark(t);
        }
    }

    @Override
    public void prepareToDestroy() {
        for (RdmaIoHandle h : Set.copyOf(handles)) h.closeNow();
        handles.clear();
    }

    @Override
    public IoRegistration register(IoHandle handle) {
        if (!(handle instanceof RdmaIoHandle h)) {
            throw new IllegalArgumentException("an RDMA event loop serves jrdma channels, not "
                    + handle.getClass().getName());
        }
        if (!handles.add(h)) throw new IllegalStateException(handle + " is already registered");
        return new Registration(h);
    }

    @Override
    public boolean isCompatible(Class<? extends IoHandle> handleType) {
        return RdmaIoHandle.class.isAssignableFrom(handleType);
    }

    private final class Registration implements IoRegistration {
        private final AtomicBoolean cancelled = new AtomicBoolean();
        private final RdmaIoHandle handle;

        Registration(RdmaIoHandle handle) {
            this.handle = handle;
        }

        @Override
        public <T> T attachment() {
            return null;
        }

        @Override
        public long submit(IoOps ops) {
            throw new UnsupportedOperationException("jrdma channels submit no I/O operations to their event loop");
        }

        @Override
        public boolean isValid() {
            return !cancelled.get();
        }

        @Override
        public boolean cancel() {
            if (!cancelled.compareAndSet(false, true)) return false;
            if (executor.isExecutorThread(Thread.currentThread())) {
                handles.remove(handle);
            } else {
                executor.execute(() -> handles.remove(handle));
            }
            return true;
        }
    }
}
