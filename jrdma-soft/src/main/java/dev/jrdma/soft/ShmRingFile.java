package dev.jrdma.soft;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.EnumSet;
import java.util.HexFormat;
import java.util.Map;
import java.util.Set;

/**
 * The file of one software device's same-host receive rings: a file under {@code /dev/shm} that the device (the
 * receiver) creates and maps, and that the devices of other processes on this host (the senders) map to put their
 * RoCEv2 packets in. {@link ShmReceiver} takes packets out, {@link ShmSender} puts them in; this class knows the file:
 * its name, its layout, how it is made, found, checked and removed.
 *
 * <p><b>Name.</b> {@code /dev/shm/jrdma-soft-UID-NETNS-ADDRESS-PORT}: the user, the network namespace (the inode of
 * {@code /proc/self/ns/net}: an address means another host in another namespace) and the device's address and UDP
 * port. The name is well known so a sender finds its peer's ring from the peer's address alone, with no exchange.
 * Whoever holds the UDP port holds the name: the port is bound first, so a file already there is stale (its process
 * died) and is replaced.
 *
 * <p><b>Who may use it.</b> Mode 0600, owned by the user: only this user's processes (and root) can map it, the same
 * ones that could attach a debugger anyway. A sender opens a ring only when the file is a regular file owned by its own
 * user with mode 0600, the same file before and after it opened it (in the sticky {@code /dev/shm} nobody else can
 * rename or remove a file of ours, so that check is final), of the exact size and format. The file is made under a
 * random name and renamed into place when complete. What a sender writes is untrusted all the same: every packet read
 * from a ring is copied out and checked as a UDP datagram would be (see {@link ShmReceiver}), and a slot is read only
 * once its sender proved, over UDP, that it holds the address the slot names; the sender uses the file only once the
 * device holding the peer's port answered from it ({@link ShmProof}).
 *
 * <p><b>Layout</b> (native byte order; both ends run on this machine): a header page, then {@link #SLOTS} rings of
 * {@link #CELLS} cells, one ring per sending device (a sender claims a slot, so each ring has a single producer process).
 * A cell holds one packet: its state word, its length, the packet. The state word says
 * whose turn the cell is (the bounded queue of D. Vyukov: a cell is free for position {@code t} when its word is
 * {@code t}, full when {@code t + 1}; stored minus the cell's index so a new, all-zero file starts empty), so neither
 * side reads an index the other writes: a sender that lies can spoil only its own ring.
 */
final class ShmRingFile implements AutoCloseable {
    static final Path DIR = Path.of("/dev/shm");
    private static final String PREFIX = "jrdma-soft-";
    static final long MAGIC = 0x4D48_5341_4D44_524AL; // "JRDMASHM" read as a little-endian long
    /** 2: slots say who claimed them, and cells carry no sender (see {@link ShmProof}). */
    static final int VERSION = 2;

    /** Sending devices one receiver takes at once; a further one sends over UDP. */
    static final int SLOTS = 8;
    /** Cells per ring: packets in flight from one sender (a power of two). */
    static final int CELLS = 1024;
    /** Bytes per cell: a header and the largest RoCEv2 packet of the 4096 MTU with every extension header. */
    static final int CELL = 4480;

    static final int CELL_HEADER = 48;
    /** The longest packet a cell holds; a longer one goes over UDP. */
    static final int MAX_PACKET = CELL - CELL_HEADER;

    // the header page: format, owner, state, and two words on lines of their own
    static final long H_MAGIC = 0, H_VERSION = 8, H_SLOTS = 12, H_CELLS = 16, H_CELL = 20, H_PID = 24, H_STATE = 32;
    /** 1 while the receiver's thread sleeps (the sender then rings the doorbell: an empty UDP datagram). */
    static final long H_WAITING = 64;
    /** A bit per slot ever claimed: the receiver looks only at those. */
    static final long H_CLAIMED = 128;

    static final long HEADER = 4096;
    static final int STATE_OPEN = 1, STATE_CLOSED = 2;

    // a slot: a control page (owner, next position; who claimed it, for the proof), then the cells
    static final long S_OWNER = 0, S_TAIL = 64;
    /** The claiming sender's address and UDP port, a random nonce and the position it starts at ({@link ShmProof}). */
    static final long S_SOURCE_HI = 128, S_SOURCE_LO = 136, S_SOURCE_PORT = 144, S_NONCE = 152, S_START = 160;

    static final long SLOT_CONTROL = 4096;
    static final long SLOT_BYTES = SLOT_CONTROL + (long) CELLS * CELL;
    static final long FILE_BYTES = HEADER + SLOTS * SLOT_BYTES;

    // a cell: its state and its packet's length (the sender is the slot's, proven: see ShmProof)
    static final long C_STATE = 0, C_LENGTH = 8;

    static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    static final VarHandle INT = ValueLayout.JAVA_INT.varHandle();

    private static final SecureRandom RANDOM = new SecureRandom();
    private static final Set<PosixFilePermission> OWNER_ONLY =
            EnumSet.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE);

    final Path path;
    private final Arena arena;
    /** The whole file, mapped. */
    final MemorySegment segment;
    /** The same memory as a buffer, for copies from a ByteBuffer without allocating. */
    final ByteBuffer buffer;
    /** Whether this process created it (the receiver): closing it marks it closed and removes it. */
    private final boolean owner;

    private boolean closed;

    /**
     * The identity (device, inode) of the file when it was made or opened: the receiver removes the name on close only
     * while it is still that file, and a sender stops using a file whose name now leads elsewhere ({@link #stillCurrent}).
     */
    private final Object key;

    private ShmRingFile(Path path, Arena arena, MemorySegment segment, boolean owner, Object key) {
        this.key = key;
        this.path = path;
        this.arena = arena;
        this.segment = segment;
        this.buffer = segment.asByteBuffer().order(ByteOrder.nativeOrder());
        this.owner = owner;
    }

    /** Where the slot {@code s} begins. */
    static long slot(int s) {
        return HEADER + s * SLOT_BYTES;
    }

    /** Where the cell for position {@code position} of slot {@code s} begins. */
    static long cell(int s, long position) {
        return slot(s) + SLOT_CONTROL + (position & (CELLS - 1)) * CELL;
    }

    /** Whether this host has a {@code /dev/shm} of the kind this needs (Linux), and who and where this process is. */
    static boolean available() {
        return Host.ID != null;
    }

    /** The file of the device on {@code address:port} in this user's and network namespace's name space. */
    static Path pathFor(IpAddress address, int port) {
        String a = address.literal().replaceAll("[^0-9A-Za-z.]", "_");
        return DIR.resolve(PREFIX + Host.ID + "-" + a + "-" + port);
    }

    /**
     * Creates the receive rings of the device on {@code address:port}, replacing a stale file of this user (its
     * process died without closing it: the caller holds the UDP port, so no live device can own the name).
     *
     * @throws IOException when it cannot be made (no /dev/shm, a file of another user in the way, no space)
     */
    static ShmRingFile create(IpAddress address, int port) throws IOException {
        if (!available()) throw new IOException("no /dev/shm, or not Linux: no same-host rings");
        Path target = pathFor(address, port);
        retire(target);
        Path tmp = DIR.resolve(target.getFileName() + "." + HexFormat.of().toHexDigits(RANDOM.nextLong()) + ".tmp");
        @SuppressWarnings("MustBeClosedChecker") // the returned ShmRingFile owns it; closed here when none is returned
        Arena arena = Arena.ofShared();
        boolean done = false;
        try (FileChannel ch = FileChannel.open(
                tmp,
                EnumSet.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.READ, StandardOpenOption.WRITE),
                PosixFilePermissions.asFileAttribute(OWNER_ONLY))) {
            Files.setPosixFilePermissions(tmp, OWNER_ONLY); // whatever the umask did
            MemorySegment seg =
                    ch.map(FileChannel.MapMode.READ_WRITE, 0, FILE_BYTES, arena); // grows the file, sparse: zeros
            seg.set(ValueLayout.JAVA_INT, H_VERSION, VERSION);
            seg.set(ValueLayout.JAVA_INT, H_SLOTS, SLOTS);
            seg.set(ValueLayout.JAVA_INT, H_CELLS, CELLS);
            seg.set(ValueLayout.JAVA_INT, H_CELL, CELL);
            seg.set(ValueLayout.JAVA_LONG, H_PID, ProcessHandle.current().pid());
            seg.set(ValueLayout.JAVA_INT, H_STATE, STATE_OPEN);
            LONG.setRelease(seg, H_MAGIC, MAGIC); // last: a sender that sees the magic sees the rest
            Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE);
            ShmRingFile f = new ShmRingFile(
                    target,
                    arena,
                    seg,
                    true,
                    Files.readAttributes(target, "fileKey", LinkOption.NOFOLLOW_LINKS)
                            .get("fileKey"));
            done = true;
            Owned.add(f);
            return f;
        } finally {
            if (!done) {
                arena.close();
                Files.deleteIfExists(tmp);
            }
        }
    }

    /**
     * Removes a stale file at {@code target} after marking it closed (a sender still holding it then finds the new
     * one). Called by a device that just bound the address and port, with same-host rings or without: a stale file
     * must not take packets meant for the new device.
     *
     * @throws IOException when a file of another user is in the way
     */
    static void retire(Path target) throws IOException {
        Map<String, Object> attrs;
        try {
            attrs = Files.readAttributes(target, "unix:uid,mode", LinkOption.NOFOLLOW_LINKS);
        } catch (NoSuchFileException none) {
            return;
        }
        if (((Number) attrs.get("uid")).intValue() != Host.uid)
            throw new IOException(target + " belongs to another user (uid " + attrs.get("uid") + ")");
        if (Files.isRegularFile(target, LinkOption.NOFOLLOW_LINKS) && Files.size(target) == FILE_BYTES) {
            try (Arena a = Arena.ofConfined();
                    FileChannel ch = FileChannel.open(
                            target, StandardOpenOption.READ, StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS)) {
                MemorySegment header = ch.map(FileChannel.MapMode.READ_WRITE, 0, HEADER, a);
                INT.setVolatile(header, H_STATE, STATE_CLOSED);
            } catch (IOException e) {
                // removed below all the same
            }
        }
        Files.deleteIfExists(target);
    }

    /**
     * The rings of the device on {@code address:port} when a live device of this user in this namespace has them, for
     * sending; null when there is none or it does not pass the checks (see the class comment).
     */
    static ShmRingFile openPeer(IpAddress address, int port) {
        if (!available()) return null;
        Path p = pathFor(address, port);
        @SuppressWarnings("MustBeClosedChecker") // the returned ShmRingFile owns it; closed here when none is returned
        Arena arena = Arena.ofShared();
        boolean done = false;
        try {
            Object before = checkedKey(p);
            if (before == null) return null;
            try (FileChannel ch =
                    FileChannel.open(p, StandardOpenOption.READ, StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS)) {
                if (ch.size() != FILE_BYTES || !before.equals(checkedKey(p))) return null;
                MemorySegment seg = ch.map(FileChannel.MapMode.READ_WRITE, 0, FILE_BYTES, arena);
                if ((long) LONG.getAcquire(seg, H_MAGIC) != MAGIC
                        || seg.get(ValueLayout.JAVA_INT, H_VERSION) != VERSION
                        || seg.get(ValueLayout.JAVA_INT, H_SLOTS) != SLOTS
                        || seg.get(ValueLayout.JAVA_INT, H_CELLS) != CELLS
                        || seg.get(ValueLayout.JAVA_INT, H_CELL) != CELL
                        || (int) INT.getVolatile(seg, H_STATE) != STATE_OPEN
                        || !alive(seg.get(ValueLayout.JAVA_LONG, H_PID))) return null;
                done = true;
                return new ShmRingFile(p, arena, seg, false, before);
            }
        } catch (IOException | RuntimeException e) {
            return null;
        } finally {
            if (!done) arena.close();
        }
    }

    /** The file's identity (device and inode) when it is a regular file of this user with mode 0600, else null. */
    private static Object checkedKey(Path p) throws IOException {
        try {
            Map<String, Object> a =
                    Files.readAttributes(p, "unix:uid,mode,fileKey,isRegularFile", LinkOption.NOFOLLOW_LINKS);
            if (!(Boolean) a.get("isRegularFile")) return null;
            if (((Number) a.get("uid")).intValue() != Host.uid) return null;
            if ((((Number) a.get("mode")).intValue() & 0777) != 0600) return null;
            return a.get("fileKey");
        } catch (NoSuchFileException none) {
            return null;
        }
    }

    static boolean alive(long pid) {
        return pid > 0 && ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
    }

    /** Whether the receiver still serves this file (a sender checks before each packet). */
    boolean isOpen() {
        return (int) INT.getOpaque(segment, H_STATE) == STATE_OPEN;
    }

    /**
     * Whether the file a sender mapped is still its receiver's live ring: open, its name still leads to it, whole, and
     * its process alive. A receiver that ended without closing it (its shutdown hook only removes the name; a killed
     * process leaves the file) or whose file was replaced or truncated fails this: the sender looks for the peer's
     * ring again instead of filling one nobody reads. A few system calls: callers ask now and then, not per packet.
     */
    boolean stillCurrent() {
        try {
            if (!key.equals(checkedKey(path)) || Files.size(path) != FILE_BYTES) return false;
            return isOpen() && alive(segment.get(ValueLayout.JAVA_LONG, H_PID));
        } catch (IOException | RuntimeException | InternalError e) {
            return false; // gone, closed by this process, or truncated under the mapping (a fault on access)
        }
    }

    /** Whether the name still leads to this file, at its full size (the receiver's own check: replaced or truncated?). */
    boolean intact() {
        try {
            return key.equals(checkedKey(path)) && Files.size(path) == FILE_BYTES;
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    /**
     * Removes the files of this user and namespace whose process is gone (once per process, when its first ring is
     * made): a process killed with its devices open leaves them behind.
     */
    static void sweepStale() {
        if (!available()) return;
        try (DirectoryStream<Path> files = Files.newDirectoryStream(DIR, PREFIX + Host.ID + "-*")) {
            for (Path f : files) {
                if (f.getFileName().toString().endsWith(".tmp")) continue; // being made, maybe by a live process
                try {
                    if (checkedKey(f) == null || Files.size(f) != FILE_BYTES) continue;
                    long pid;
                    try (FileChannel ch = FileChannel.open(f, StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS)) {
                        ByteBuffer b = ByteBuffer.allocate(8).order(ByteOrder.nativeOrder());
                        ch.read(b, H_PID);
                        pid = b.getLong(0);
                    }
                    if (!alive(pid)) retire(f);
                } catch (IOException | RuntimeException e) {
                    // another process removed or replaced it meanwhile: nothing to do
                }
            }
        } catch (IOException | RuntimeException e) {
            // no /dev/shm listing: nothing to sweep
        }
    }

    /**
     * Unmaps the file; the receiver also marks it closed (senders stop using it) and removes it. Threads must not
     * touch {@link #segment} any more (a shared arena makes a late access fail, not crash).
     */
    @Override
    public synchronized void close() {
        if (closed) return;
        closed = true;
        if (owner) {
            Owned.remove(this);
            markClosed();
            removeName();
        }
        arena.close();
    }

    /** Tells senders this file is served no more (nothing happens when it was truncated under the mapping). */
    private void markClosed() {
        try {
            INT.setVolatile(segment, H_STATE, STATE_CLOSED);
        } catch (RuntimeException | InternalError truncated) {
            // its senders fault on their next packet and look for the ring again
        }
    }

    /** Removes the name while it still leads to this file. */
    private void removeName() {
        try {
            if (key.equals(Files.readAttributes(path, "fileKey", LinkOption.NOFOLLOW_LINKS)
                    .get("fileKey"))) Files.delete(path);
        } catch (IOException ignored) {
            // gone already, or replaced by a newer device's (ours was stale): not ours to remove
        }
    }

    /**
     * The files this process made and has not closed: removed when the JVM exits (devices left open at exit, e.g. a
     * test's shared devices). A process killed outright leaves them: {@link #sweepStale} and {@link #retire} do then.
     */
    private static final class Owned {
        private static final Set<ShmRingFile> FILES = java.util.concurrent.ConcurrentHashMap.newKeySet();

        static {
            // marked closed first: a sender that mapped the file keeps the mapping after the name goes, and would
            // go on filling a ring nobody reads (a peer restarted at this address would never be reached)
            Runtime.getRuntime().addShutdownHook(Thread.ofPlatform().unstarted(() -> {
                for (ShmRingFile f : FILES) {
                    synchronized (f) {
                        if (f.closed) continue;
                        f.markClosed();
                        f.removeName();
                    }
                }
            }));
        }

        static void add(ShmRingFile f) {
            FILES.add(f);
        }

        static void remove(ShmRingFile f) {
            FILES.remove(f);
        }
    }

    /** This process's user and network namespace, read once; {@link #ID} null where there is no /dev/shm or /proc. */
    private static final class Host {
        static final String ID;
        static final int uid;

        static {
            String id = null;
            int u = -1;
            try {
                if (Files.isDirectory(DIR)
                        && System.getProperty("os.name", "")
                                .toLowerCase(java.util.Locale.ROOT)
                                .contains("linux")) {
                    u = ((Number) Files.getAttribute(Path.of("/proc/self"), "unix:uid")).intValue();
                    String ns =
                            Files.readSymbolicLink(Path.of("/proc/self/ns/net")).toString(); // net:[4026531833]
                    id = u + "-" + ns.replaceAll("[^0-9]", "");
                }
            } catch (IOException | RuntimeException e) {
                id = null;
            }
            ID = id;
            uid = u;
        }
    }
}
