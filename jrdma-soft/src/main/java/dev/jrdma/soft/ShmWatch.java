package dev.jrdma.soft;

/**
 * Checks each device's own file about once a second, on a daemon thread of its own: a file replaced under its name
 * faults nowhere (its senders find the other file), and the checks allocate, which the driving threads must not.
 */
final class ShmWatch {
    private static final System.Logger LOG = System.getLogger("dev.jrdma.soft");

    private ShmWatch() {}

    private static final java.util.Set<ShmLink> LINKS = java.util.concurrent.ConcurrentHashMap.newKeySet();

    static {
        Thread.ofPlatform().daemon().name("jrdma-soft-shm-watch").start(() -> {
            while (true) {
                try {
                    Thread.sleep(ShmLink.OWN_CHECK_MILLIS);
                } catch (InterruptedException e) {
                    return;
                }
                for (ShmLink link : LINKS) {
                    try {
                        link.checkOwnFile();
                        link.releaseRetiring();
                    } catch (RuntimeException | InternalError e) {
                        LOG.log(System.Logger.Level.DEBUG, "same-host ring check failed", e);
                    }
                }
            }
        });
    }

    static void add(ShmLink link) {
        LINKS.add(link);
    }

    static void remove(ShmLink link) {
        LINKS.remove(link);
    }
}
