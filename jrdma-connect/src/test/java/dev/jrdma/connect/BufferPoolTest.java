package dev.jrdma.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.AddressHandle;
import dev.jrdma.verbs.AhAttr;
import dev.jrdma.verbs.Context;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.MemoryWindow;
import dev.jrdma.verbs.MwType;
import dev.jrdma.verbs.ProtectionDomain;
import dev.jrdma.verbs.QpInitAttr;
import dev.jrdma.verbs.QueuePair;
import dev.jrdma.verbs.SharedReceiveQueue;
import dev.jrdma.verbs.SrqAttr;
import dev.jrdma.verbs.VerbsException;
import dev.jrdma.verbs.WorkCompletion;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.util.EnumSet;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 8 §5: a pool frees memory only after its region's deregistration succeeded. The protection domain here is
 * the software device's, wrapped so that deregistering its regions fails (as {@code ibv_dereg_mr} does with EBUSY or
 * EINVAL while memory windows are bound): the real region stays registered, so the device could still write into
 * the memory, and the pool must keep it.
 */
@Timeout(60)
class BufferPoolTest {
    static {
        TestSupport.init();
    }

    @Test
    void memoryWhoseDeregistrationFailsIsKeptAndCounted() throws Exception {
        try (Context ctx = Devices.forLocalAddress(InetAddress.getByName(TestSupport.HOST), TestSupport.DEVICE)
                        .open();
                ProtectionDomain real = ctx.allocPd()) {
            DeregFails pd = new DeregFails(real);
            BufferPool pool = new BufferPool(pd, 4096, EnumSet.of(Access.LOCAL_WRITE));
            RegisteredBuffer slice = pool.allocate(64);
            RegisteredBuffer large = pool.allocate(8192); // a region of its own
            MemorySegment sliceMemory = slice.region().segment(), largeMemory = large.segment();
            slice.segment().set(ValueLayout.JAVA_LONG, 0, 0x5A5A);

            large.close(); // gives the dedicated region back: its deregistration fails
            assertTrue(largeMemory.scope().isAlive(), "the memory of a region still registered was freed");
            largeMemory.set(ValueLayout.JAVA_LONG, 8, 7); // still there: what the device may write lands in kept memory
            assertEquals(8192, pool.leakedBytes());

            pool.close(); // the slab's deregistration fails too
            assertTrue(sliceMemory.scope().isAlive(), "the memory of a slab still registered was freed");
            assertEquals(0x5A5A, sliceMemory.get(ValueLayout.JAVA_LONG, 0));
            assertEquals(8192 + 4096, pool.leakedBytes());
            assertFalse(pd.registered.isClosed(), "the device still holds the region");

            // a pool whose deregistrations succeed frees everything and keeps nothing
            BufferPool good = new BufferPool(real, 4096, EnumSet.of(Access.LOCAL_WRITE));
            MemorySegment goodMemory = good.allocate(64).region().segment();
            good.close();
            assertFalse(goodMemory.scope().isAlive());
            assertEquals(0, good.leakedBytes());
        }
    }

    /** A protection domain whose regions refuse to be deregistered (the real ones stay registered until the PD closes). */
    private static final class DeregFails implements ProtectionDomain {
        private final ProtectionDomain real;
        MemoryRegion registered;

        DeregFails(ProtectionDomain real) {
            this.real = real;
        }

        @Override
        public Context context() {
            return real.context();
        }

        @Override
        public MemoryRegion registerMemory(MemorySegment segment, Set<Access> access) {
            MemoryRegion mr = real.registerMemory(segment, access);
            registered = mr;
            return new MemoryRegion() {
                @Override
                public ProtectionDomain pd() {
                    return DeregFails.this;
                }

                @Override
                public MemorySegment segment() {
                    return mr.segment();
                }

                @Override
                public long address() {
                    return mr.address();
                }

                @Override
                public long length() {
                    return mr.length();
                }

                @Override
                public int lkey() {
                    return mr.lkey();
                }

                @Override
                public int rkey() {
                    return mr.rkey();
                }

                @Override
                public Set<Access> access() {
                    return mr.access();
                }

                @Override
                public boolean isClosed() {
                    return mr.isClosed();
                }

                @Override
                public void close() {
                    throw new VerbsException(
                            "ibv_dereg_mr",
                            VerbsException.EBUSY,
                            "a memory window is still bound to the region (the test's fault)");
                }
            };
        }

        @Override
        public QueuePair createQueuePair(QpInitAttr attr) {
            return real.createQueuePair(attr);
        }

        @Override
        public SharedReceiveQueue createSrq(SrqAttr attr) {
            return real.createSrq(attr);
        }

        @Override
        public AddressHandle createAddressHandle(AhAttr attr) {
            return real.createAddressHandle(attr);
        }

        @Override
        public AddressHandle createAddressHandleFromWc(WorkCompletion wc, MemorySegment grh, int port) {
            return real.createAddressHandleFromWc(wc, grh, port);
        }

        @Override
        public MemoryWindow allocMemoryWindow(MwType type) {
            return real.allocMemoryWindow(type);
        }

        @Override
        public boolean isClosed() {
            return real.isClosed();
        }

        @Override
        public void close() {
            real.close();
        }
    }
}
