/**
 * The RoCEv2 wire format: InfiniBand transport headers (IBA vol 1 ch. 9, Annex A17) carried in UDP datagrams to
 * port 4791. Flyweight, allocation-free readers and writers that work in place on a big-endian
 * {@link java.nio.ByteBuffer} at an offset: {@link dev.jrdma.soft.wire.Bth}, {@link dev.jrdma.soft.wire.Reth},
 * {@link dev.jrdma.soft.wire.Aeth}, {@link dev.jrdma.soft.wire.AtomicEth}, {@link dev.jrdma.soft.wire.AtomicAckEth},
 * {@link dev.jrdma.soft.wire.ImmDt}, {@link dev.jrdma.soft.wire.Ieth}; the RC opcode table
 * ({@link dev.jrdma.soft.wire.Opcode}: which headers follow the BTH, whether a payload does);
 * {@link dev.jrdma.soft.wire.RocePacket}, a reusable view of a whole packet; the invariant CRC as Linux rdma_rxe
 * computes it ({@link dev.jrdma.soft.wire.Icrc}); 24-bit PSN arithmetic ({@link dev.jrdma.soft.wire.Psn}) and the
 * path MTU codes ({@link dev.jrdma.soft.wire.Mtu}).
 */
package dev.jrdma.soft.wire;
