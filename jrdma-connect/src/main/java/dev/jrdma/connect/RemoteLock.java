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
 *
 * <p>A compare-and-swap that fails without an answer (a completion error such as RETRY_EXC_ERR, the endpoint's
 * timeout, the connection lost) may still have executed at the peer: the word may hold this owner's id although no
 * acquire returned true, and nobody would ever release it. Such a failure leaves the lock {@link State#UNCERTAIN}:
 * {@link #tryLock()} refuses to guess until {@link #releaseIfHeld} (typically through a new connection, since a
 * failed operation usually ends the endpoint) has freed the word if, and only if, it holds this owner's id.
 * <pre>{@code
 * try {
 *     if (lock.tryLock(timeout)) { ...; lock.unlock(); }
 * } catch (RdmaException e) {
 *     if (lock.state() == RemoteLock.State.UNCERTAIN) lock.releaseIfHeld(newEndpoint, newGrantOfTheWord);
 * }
 * }</pre>
 */
public final class RemoteLock {
    private static final long MIN_BACKOFF_NS = 20_000, MAX_BACKOFF_NS = 1_000_000;

    /** What this object knows about the lock word. */
    public enum State {
        /** The word does not hold this owner's id: no acquire succeeded, or the lock was released. */
        NOT_HELD,
        /** The last acquire succeeded and the lock was not released since. */
        HELD,
        /**
         * A compare-and-swap (of an acquire or a release) failed without an answer: it may or may not have executed
         * at the peer, so the word may hold this owner's id. Leave with {@link #releaseIfHeld}.
         */
        UNCERTAIN
    }

    private Endpoint endpoint;
    private RemoteBuffer word;
    private final long owner;
    private State state = State.NOT_HELD;

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
        return state == State.HELD;
    }

    /** {@return what this object knows about the word: held, not held, or uncertain after a failed compare-and-swap} */
    public synchronized State state() {
        return state;
    }

    /** One compare-and-swap through the current endpoint; a failure without an answer makes the state uncertain. */
    private long compareAndSwap(Endpoint via, RemoteBuffer at, long expect, long swap) {
        try {
            return via.compareAndSwapSync(at, 0, expect, swap);
        } catch (RdmaException e) {
            state = State.UNCERTAIN;
            throw e;
        }
    }

    /**
     * Tries once: one compare-and-swap of 0 to the owner id. A word that already holds this owner's id (an earlier
     * acquire executed but its answer was lost) counts as taken.
     *
     * @return whether the lock was taken
     * @throws IllegalStateException    when this object already holds it (not reentrant), or its state is
     *                                  {@link State#UNCERTAIN} (call {@link #releaseIfHeld} first)
     * @throws IllegalArgumentException when the word is not 8-byte aligned
     * @throws RdmaException            when the compare-and-swap fails (e.g. REM_ACCESS_ERR, the endpoint is closed,
     *                                  or no answer within the endpoint's timeout); the state is then
     *                                  {@link State#UNCERTAIN}
     */
    public synchronized boolean tryLock() {
        if (state == State.HELD)
            throw new IllegalStateException("this lock is already held by this owner (not reentrant)");
        if (state == State.UNCERTAIN) {
            throw new IllegalStateException(
                    "an earlier compare-and-swap of this lock failed without an answer, so the word may hold this owner's id 0x"
                            + Long.toHexString(owner)
                            + ": call releaseIfHeld (through a working connection) before trying again");
        }
        long seen = compareAndSwap(endpoint, word, 0, owner);
        state = seen == 0 || seen == owner ? State.HELD : State.NOT_HELD;
        return state == State.HELD;
    }

    /**
     * Tries until {@code timeout} passes, backing off between attempts (20 us doubling to 1 ms, with jitter).
     *
     * @param timeout how long to keep trying; zero: one attempt
     * @return true when the lock was taken, false when the timeout passed first
     * @throws IllegalStateException when this object already holds it (not reentrant), or its state is uncertain
     * @throws RdmaException         when a compare-and-swap fails (the state is then {@link State#UNCERTAIN})
     */
    public synchronized boolean tryLock(Duration timeout) {
        Clock clock = endpoint.group().clock();
        long deadline = clock.nanoTime() + timeout.toNanos();
        long backoff = MIN_BACKOFF_NS;
        while (true) {
            if (tryLock()) return true;
            long left = deadline - clock.nanoTime();
            if (left <= 0) return false;
            long pause =
                    Math.min(left, backoff / 2 + ThreadLocalRandom.current().nextLong(backoff / 2 + 1));
            LockSupport.parkNanos(pause);
            backoff = Math.min(MAX_BACKOFF_NS, backoff * 2);
        }
    }

    /**
     * Waits as long as it takes (each attempt still fails within the endpoint's timeout if the peer is gone).
     *
     * @throws IllegalStateException when this object already holds it (not reentrant), or its state is uncertain
     * @throws RdmaException         when a compare-and-swap fails (the state is then {@link State#UNCERTAIN})
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
     * @throws RdmaException                when the compare-and-swap fails: whether the word was freed is unknown, the
     *                                      state is {@link State#UNCERTAIN}
     */
    public synchronized void unlock() {
        if (state != State.HELD)
            throw new IllegalMonitorStateException("unlock without holding the lock (state " + state + ")");
        long seen = compareAndSwap(endpoint, word, owner, 0);
        state = State.NOT_HELD;
        if (seen != owner) {
            throw new IllegalMonitorStateException(String.format(
                    "the lock word held 0x%x, not this owner's id 0x%x: someone else cleared or took it", seen, owner));
        }
    }

    /**
     * The way out of {@link State#UNCERTAIN} (or of a connection lost while holding the lock): one compare-and-swap of
     * this owner's id to 0 through {@code via}, so the word is freed if, and only if, it holds this owner's id; another
     * owner's lock is never touched. From then on this object uses {@code via} and {@code viaWord} (a failed
     * operation usually ends its endpoint, so this is typically a new connection with its own grant of the word).
     *
     * @param via     a connection to the side that holds the word
     * @param viaWord the same lock word as {@code via}'s peer grants it (its own key), at least 8 bytes
     * @return whether the word held this owner's id (and is now free)
     * @throws IndexOutOfBoundsException when {@code viaWord} is shorter than 8 bytes
     * @throws RdmaException             when this compare-and-swap fails too: the state stays {@link State#UNCERTAIN};
     *                                   try again through another connection
     */
    public synchronized boolean releaseIfHeld(Endpoint via, RemoteBuffer viaWord) {
        viaWord.check(0, 8, "lock word");
        endpoint = via;
        word = viaWord;
        long seen = compareAndSwap(via, viaWord, owner, 0);
        state = State.NOT_HELD;
        return seen == owner;
    }
}
