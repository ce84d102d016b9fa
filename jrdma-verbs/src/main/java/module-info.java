/**
 * The verbs API of jrdma: devices of every provider, contexts, protection domains, memory regions and windows,
 * completion queues and channels, queue pairs and work requests ({@link dev.jrdma.verbs}), and the interface a
 * provider implements ({@link dev.jrdma.verbs.spi}). Providers are services: put {@code dev.jrdma.soft} (the
 * software RoCEv2 device) and/or {@code dev.jrdma.nativeverbs} (libibverbs through FFM) on the module path.
 *
 * @uses dev.jrdma.verbs.spi.VerbsProvider
 */
module dev.jrdma.verbs {
    exports dev.jrdma.verbs;
    exports dev.jrdma.verbs.spi;

    uses dev.jrdma.verbs.spi.VerbsProvider;
}
