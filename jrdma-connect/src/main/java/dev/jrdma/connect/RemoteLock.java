package dev.jrdma.connect;

import java.security.SecureRandom;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.locks.LockSupport;

/**
 * A distributed lock on a remote 8-byte word (0 = free, else the owner's id), taken and released with RDMA
 * compare-and-swap: no CPU on the side that holds the word. Waiting clients back off exponentially with jitter
 * (from 20 us up to 1 ms). Not reentrant. A client that dies holding the lock leaves it held: clear the word to
 * recover (or build leases on top).
 */
public final class RemoteLock {
    private static final long MIN_BACKOFF_NS = 20_000, MAX_BACKOFF_NS = 1_000_000;

    private final Endpoint endpoint;
    private final RemoteBuffer word;
    private final long owner;
    private boolean held;

    /**
     * A lock on the word at the start of {@code word}, with a random non-zero owner id.
     *
     * @param endpoint the connection to the side that holds the word
     * @param word     the lock word's buffer, at least 8 bytes, 8-byte aligned, with remote atomic rights
     * @throws IndexOutOfBoundsException when {@code word} is shorter than 8 bytes
     */
    public RemoteLock(Endpoint endpoint, RemoteBuffer word) {
        this(endpoint, word, randomOwner());
    }

    /**
     * A lock with an explicit owner id.
     *
     * @param endpoint the connection to the side that holds the word
     * @param word     the lock word's buffer, at least 8 bytes, 8-byte aligned, with remote atomic rights
     * @param owner    the id written into the word while held: non-zero, unique among the contenders
     * @throws IllegalArgumentException  when {@code owner} is 0
     * @throws IndexOutOfBoundsException when {@code word} is shorter than 8 bytes
     */
    public RemoteLock(Endpoint endpoint, RemoteBuffer word, long owner) {
        if (owner == 0) throw new IllegalArgumentException("owner id 0 means 'free'; use a non-zero id");
        word.check(0, 8, "lock word");
        this.endpoint = endpoint;
        this.word = word;
        this.owner = owner;
    }

    private static long randomOwner() {
        long id;
        do {
            id = new SecureRandom().nextLong();
        } while (id == 0);
        return id;
    }

    /** {@return the id this lock writes into the word while it holds it} */
    public long owner() {
        return owner;
    }

    /** {@return whether this object holds the lock (its last acquire succeeded and it has not unlocked)} */
    public synchronized boolean isHeldByMe() {
        return held;
    }

    /**
     * Tries once: one compare-and-swap of 0 to the owner id.
     *
     * @return whether the lock was taken
     * @throws IllegalStateException    when this object already holds it (not reentrant)
     * @throws IllegalArgumentException when the word is not 8-byte aligned
     * @throws RdmaException            when the compare-and-swap fails (e.g. REM_ACCESS_ERR, the endpoint is closed,
     *                                  or no answer within the endpoint's timeout)
     */
    public synchronized boolean tryLock() {
        if (held) throw new IllegalStateException("this lock is already held by this owner (not reentrant)");
        long seen = endpoint.compareAndSwapSync(word, 0, 0, owner);
        held = seen == 0;
        return held;
    }

    /**
     * Tries until {@code timeout} passes, backing off between attempts (20 us doubling to 1 ms, with jitter).
     *
     * @param timeout how long to keep trying; zero: one attempt
     * @return true when the lock was taken, false when the timeout passed first
     * @throws IllegalStateException when this object already holds it (not reentrant)
     * @throws RdmaException         when a compare-and-swap fails
     */
    public synchronized boolean tryLock(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        long backoff = MIN_BACKOFF_NS;
        while (true) {
            if (tryLock()) return true;
            long left = deadline - System.nanoTime();
            if (left <= 0) return false;
            long pause = Math.min(left, backoff / 2 + ThreadLocalRandom.current().nextLong(backoff / 2 + 1));
            LockSupport.parkNanos(pause);
            backoff = Math.min(MAX_BACKOFF_NS, backoff * 2);
        }
    }

    /**
     * Waits as long as it takes (each attempt still fails within the endpoint's timeout if the peer is gone).
     *
     * @throws IllegalStateException when this object already holds it (not reentrant)
     * @throws RdmaException         when a compare-and-swap fails
     */
    public void lock() {
        while (!tryLock(Duration.ofSeconds(1))) {
            Thread.onSpinWait();
        }
    }

    /**
     * Releases the lock: one compare-and-swap of the owner id back to 0.
     *
     * @throws IllegalMonitorStateException when this object does not hold the lock, or the word did not hold this
     *                                      owner's id (someone cleared or took it); it is no longer held either way
     * @throws RdmaException                when the compare-and-swap fails
     */
    public synchronized void unlock() {
        if (!held) throw new IllegalMonitorStateException("unlock without holding the lock");
        long seen = endpoint.compareAndSwapSync(word, 0, owner, 0);
        held = false;
        if (seen != owner) {
            throw new IllegalMonitorStateException(String.format("the lock word held 0x%x, not this owner's id 0x%x: someone else cleared or took it", seen, owner));
        }
    }
}
