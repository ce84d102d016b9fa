/**
 * The software RoCEv2 device: a {@link dev.jrdma.verbs.spi.VerbsProvider} that speaks RoCEv2 over UDP in the JVM,
 * so every jrdma program runs without RDMA hardware. Nothing here is API: use it through {@code dev.jrdma.verbs}.
 *
 * @provides dev.jrdma.verbs.spi.VerbsProvider the {@code soft} provider: one device per local IPv4 address
 */
module dev.jrdma.soft {
    requires dev.jrdma.verbs;

    provides dev.jrdma.verbs.spi.VerbsProvider with
            dev.jrdma.soft.SoftProvider;
}
