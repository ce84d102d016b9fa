package dev.jrdma.verbs;

import java.time.Duration;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * The listener form of {@link Context#awaitAsyncEvent}: a daemon thread that waits for each event, hands it to the
 * listener and acknowledges it. It ends when closed or when its context closes. A listener that throws does not stop
 * it (the failure is logged and the event still acknowledged), nor does a wait that throws (logged; it waits again).
 */
public final class AsyncEventDispatcher implements AutoCloseable {
    /** How long one wait lasts before the thread looks whether it was closed. */
    private static final Duration SLICE = Duration.ofMillis(200);

    private final Context context;
    private final Consumer<AsyncEvent> listener;
    private final Thread thread;
    private volatile boolean stopped;

    private AsyncEventDispatcher(Context context, Consumer<AsyncEvent> listener) {
        this.context = context;
        this.listener = listener;
        this.thread = Thread.ofPlatform()
                .daemon()
                .name("jrdma async events " + context.device().name())
                .unstarted(this::run);
    }

    static AsyncEventDispatcher start(Context context, Consumer<AsyncEvent> listener) {
        AsyncEventDispatcher d =
                new AsyncEventDispatcher(Objects.requireNonNull(context), Objects.requireNonNull(listener, "listener"));
        d.thread.start();
        return d;
    }

    private void run() {
        while (!stopped && !context.isClosed()) {
            AsyncEvent event;
            try {
                event = context.awaitAsyncEvent(SLICE);
            } catch (ClosedException e) {
                return;
            } catch (RuntimeException | Error e) {
                // a provider's bug must not end event delivery for good: report it, wait a slice (no spinning on a
                // failure that repeats) and wait again
                if (context.isClosed()) return;
                System.getLogger("dev.jrdma.verbs")
                        .log(System.Logger.Level.WARNING, "waiting for asynchronous events failed", e);
                pause();
                continue;
            }
            if (event == null) continue;
            try {
                listener.accept(event);
            } catch (RuntimeException | Error e) {
                System.getLogger("dev.jrdma.verbs")
                        .log(System.Logger.Level.WARNING, "an asynchronous event listener failed on " + event, e);
            } finally {
                try {
                    event.ack();
                } catch (RuntimeException e) {
                    // the element closed meanwhile: its close acknowledged the event
                }
            }
        }
    }

    private void pause() {
        try {
            Thread.sleep(SLICE);
        } catch (InterruptedException e) {
            stopped = true;
        }
    }

    /** {@return whether the thread still runs: false once closed or once the context closed} */
    public boolean isRunning() {
        return thread.isAlive();
    }

    /** Stops the thread (within one wait slice) and waits for it, unless called from the listener itself. */
    @Override
    public void close() {
        stopped = true;
        if (Thread.currentThread() == thread) return;
        try {
            thread.join(Duration.ofSeconds(10));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
