package dev.jrdma.soft;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;

/**
 * A test's wrapper around a real {@link Link}: the link's five abstract calls go to {@link #delegate}, so a wrapper
 * writes only the calls it changes (a record names its component {@code delegate}). Link's default methods stay
 * Link's own, as they were for each wrapper that wrote the five out.
 */
interface ForwardingLink extends Link {
    /** {@return the link this one wraps} */
    Link delegate();

    @Override
    default boolean send(ByteBuffer b, InetSocketAddress to) throws IOException {
        return delegate().send(b, to);
    }

    @Override
    default InetSocketAddress receive(ByteBuffer b) throws IOException {
        return delegate().receive(b);
    }

    @Override
    default void await() throws IOException {
        delegate().await();
    }

    @Override
    default void wakeup() {
        delegate().wakeup();
    }

    @Override
    default void close() {
        delegate().close();
    }
}
