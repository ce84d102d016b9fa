package dev.jrdma.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.jrdma.testkit.RcPair;
import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.MemoryWindow;
import dev.jrdma.verbs.MwType;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.VerbsException;
import dev.jrdma.verbs.WcOpcode;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.util.EnumSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Memory windows grant a peer part of a region and revoke it without re-registering. */
@Timeout(60)
class MemoryWindowTest {

    private static MemoryRegion windowed(RcPair p) {
        return p.a.mr(8192, Access.LOCAL_WRITE, Access.REMOTE_READ, Access.REMOTE_WRITE, Access.MW_BIND);
    }

    private static WcStatus read(RcPair p, MemoryRegion local, long addr, int rkey, int len) {
        p.a.qp.postSend(new SendWorkRequest()
                .opcode(WrOpcode.RDMA_READ)
                .buffer(local, 0, len)
                .remote(addr, rkey)
                .signaled(true));
        return p.await(p.a.cq).status;
    }

    @Test
    void type1WindowBoundThenDeallocated() {
        try (RcPair p = Suite.pair().build()) {
            assumeTrue(p.a.ctx.queryDevice().supportsMemoryWindows(), "device has no memory windows");
            MemoryRegion target = windowed(p), local = p.a.mrAll(4096);
            RcPair.fill(target.segment(), 1024, 256, 8);
            MemoryWindow mw = p.a.pd.allocMemoryWindow(MwType.TYPE_1);
            int rkey = p.b.qp.bindMemoryWindow(
                    mw, 50, true, target, target.address() + 1024, 256, EnumSet.of(Access.REMOTE_READ));
            WorkCompletion bind = p.await(p.b.cq);
            assertEquals(WcStatus.SUCCESS, bind.status, bind::toString);
            assertEquals(WcOpcode.BIND_MW, bind.opcode);
            assertEquals(rkey, mw.rkey());
            assertNotEquals(target.rkey(), rkey);
            assertEquals(WcStatus.SUCCESS, read(p, local, target.address() + 1024, rkey, 256));
            RcPair.assertFilled(local.segment(), 0, 256, 8);
            // outside the window's range: refused although inside the MR. Linux 6.1's rxe checks the range
            // against the MR instead (a kernel deviation from the spec), so this check is skipped there.
            if (!p.a.ctx.device().name().startsWith("rxe")) {
                assertEquals(WcStatus.REM_ACCESS_ERR, read(p, local, target.address() + 1024 + 200, rkey, 100));
            }
        }
    }

    @Test
    void type1WindowRevokedByDeallocation() {
        try (RcPair p = Suite.pair().build()) {
            assumeTrue(p.a.ctx.queryDevice().supportsMemoryWindows(), "device has no memory windows");
            MemoryRegion target = windowed(p), local = p.a.mrAll(4096);
            MemoryWindow mw = p.a.pd.allocMemoryWindow(MwType.TYPE_1);
            int rkey = p.b.qp.bindMemoryWindow(
                    mw, 50, true, target, target.address(), 512, EnumSet.of(Access.REMOTE_READ));
            assertEquals(WcStatus.SUCCESS, p.await(p.b.cq).status);
            assertEquals(WcStatus.SUCCESS, read(p, local, target.address(), rkey, 64));
            mw.close();
            assertEquals(WcStatus.REM_ACCESS_ERR, read(p, local, target.address(), rkey, 64));
        }
    }

    @Test
    void type2WindowBoundByWorkRequestAndInvalidated() {
        try (RcPair p = Suite.pair().build()) {
            assumeTrue(p.a.ctx.queryDevice().supportsType2Windows(), "device has no type 2 memory windows");
            MemoryRegion target = windowed(p), local = p.a.mrAll(4096);
            MemoryWindow mw = p.a.pd.allocMemoryWindow(MwType.TYPE_2);
            int rkey = (mw.rkey() & 0xFFFFFF00) | ((mw.rkey() + 1) & 0xFF);
            SendWorkRequest bind = new SendWorkRequest()
                    .opcode(WrOpcode.BIND_MW)
                    .wrId(60)
                    .noBuffer()
                    .signaled(true);
            bind.bindMw = mw;
            bind.bindRkey = rkey;
            bind.bindMr = target;
            bind.bindAddr = target.address() + 512;
            bind.bindLength = 512;
            bind.bindAccess.add(Access.REMOTE_WRITE);
            p.b.qp.postSend(bind);
            WorkCompletion wc = p.await(p.b.cq);
            assertEquals(WcStatus.SUCCESS, wc.status, wc::toString);
            assertEquals(WcOpcode.BIND_MW, wc.opcode);
            RcPair.fill(local.segment(), 0, 100, 2);
            p.a.qp.postSend(new SendWorkRequest()
                    .opcode(WrOpcode.RDMA_WRITE)
                    .buffer(local, 0, 100)
                    .remote(target.address() + 512, rkey)
                    .signaled(true));
            assertEquals(WcStatus.SUCCESS, p.await(p.a.cq).status);
            RcPair.assertFilled(target.segment(), 512, 100, 2);
            // the window grants REMOTE_WRITE only: a read through it is refused... after which A's QP is in ERR,
            // so invalidate first and check the revocation instead
            SendWorkRequest inv = new SendWorkRequest()
                    .opcode(WrOpcode.LOCAL_INV)
                    .wrId(61)
                    .noBuffer()
                    .signaled(true);
            inv.invalidateRkey = rkey;
            p.b.qp.postSend(inv);
            WorkCompletion invWc = p.await(p.b.cq);
            assertEquals(WcStatus.SUCCESS, invWc.status, invWc::toString);
            assertEquals(WcOpcode.LOCAL_INV, invWc.opcode);
            p.a.qp.postSend(new SendWorkRequest()
                    .opcode(WrOpcode.RDMA_WRITE)
                    .buffer(local, 0, 100)
                    .remote(target.address() + 512, rkey)
                    .signaled(true));
            assertEquals(WcStatus.REM_ACCESS_ERR, p.await(p.a.cq).status);
        }
    }

    /** Writes {@code len} bytes from {@code local} through {@code rkey} at {@code addr} of B; returns A's completion status. */
    private static WcStatus write(RcPair p, MemoryRegion local, long addr, int rkey, int len) {
        p.a.qp.postSend(new SendWorkRequest()
                .opcode(WrOpcode.RDMA_WRITE)
                .buffer(local, 0, len)
                .remote(addr, rkey)
                .signaled(true));
        return p.await(p.a.cq).status;
    }

    /** A type 2 bind of {@code mw} to {@code target}'s first {@code length} bytes with {@code rkey} (0: the next key). */
    private static SendWorkRequest type2Bind(MemoryWindow mw, int rkey, MemoryRegion target, long length) {
        SendWorkRequest bind = new SendWorkRequest()
                .opcode(WrOpcode.BIND_MW)
                .wrId(70)
                .noBuffer()
                .signaled(true);
        bind.bindMw = mw;
        bind.bindRkey = rkey;
        bind.bindMr = target;
        bind.bindAddr = target.address();
        bind.bindLength = length;
        bind.bindAccess.add(Access.REMOTE_WRITE);
        return bind;
    }

    @Test
    void type1RebindGivesANewRkeyAndRevokesTheOldOne() {
        try (RcPair p = Suite.pair().build()) {
            assumeTrue(p.b.ctx.queryDevice().supportsMemoryWindows(), "device has no memory windows");
            MemoryRegion target = p.b.mrBindable(4096), local = p.a.mrAll(4096);
            MemoryWindow mw = p.b.pd.allocMemoryWindow(MwType.TYPE_1);
            int first = p.b.qp.bindMemoryWindow(
                    mw, 51, true, target, target.address(), 1024, EnumSet.of(Access.REMOTE_WRITE, Access.REMOTE_READ));
            assertEquals(WcStatus.SUCCESS, p.await(p.b.cq).status);
            RcPair.fill(local.segment(), 0, 256, 6);
            assertEquals(WcStatus.SUCCESS, write(p, local, target.address() + 256, first, 256));
            RcPair.assertFilled(target.segment(), 256, 256, 6);
            int second = p.b.qp.bindMemoryWindow(
                    mw, 52, true, target, target.address(), 512, EnumSet.of(Access.REMOTE_READ));
            assertEquals(WcStatus.SUCCESS, p.await(p.b.cq).status);
            assertNotEquals(first, second, "a bind takes a new key");
            assertEquals(second, mw.rkey());
            assertEquals(WcStatus.SUCCESS, read(p, local, target.address(), second, 64));
            assertEquals(WcStatus.REM_ACCESS_ERR, read(p, local, target.address(), first, 64), "the old key is dead");
        }
    }

    @Test
    void type1BindToARegionWithoutMwBindIsRefused() {
        try (RcPair p = Suite.pair().build()) {
            assumeTrue(p.b.ctx.queryDevice().supportsMemoryWindows(), "device has no memory windows");
            MemoryRegion plain = p.b.mr(64, Access.LOCAL_WRITE, Access.REMOTE_WRITE);
            MemoryWindow mw = p.b.pd.allocMemoryWindow(MwType.TYPE_1);
            // libibverbs' checks refuse it at the call on the native provider; the software device, like a device
            // that takes the bind as a work request, completes it with MW_BIND_ERR (IBA C10-73)
            try {
                p.b.qp.bindMemoryWindow(mw, 53, true, plain, plain.address(), 64, EnumSet.of(Access.REMOTE_WRITE));
            } catch (VerbsException refused) {
                assertTrue(refused.getMessage().contains("MW_BIND"), refused.getMessage());
                return;
            }
            assertEquals(WcStatus.MW_BIND_ERR, p.await(p.b.cq).status);
        }
    }

    @Test
    void type2WindowBoundTwiceFailsTheSecondBind() {
        try (RcPair p = Suite.pair().build()) {
            assumeTrue(p.b.ctx.queryDevice().supportsType2Windows(), "device has no type 2 memory windows");
            MemoryRegion target = p.b.mrBindable(4096), local = p.a.mrAll(4096);
            MemoryWindow mw = p.b.pd.allocMemoryWindow(MwType.TYPE_2);
            int rkey = (mw.rkey() & ~0xFF) | 0x42;
            SendWorkRequest bind = type2Bind(mw, rkey, target, 2048);
            p.b.qp.postSend(bind);
            WorkCompletion bound = p.await(p.b.cq);
            assertEquals(WcStatus.SUCCESS, bound.status, bound::toString);
            assertEquals(rkey, mw.rkey());
            RcPair.fill(local.segment(), 0, 2048, 12);
            assertEquals(WcStatus.SUCCESS, write(p, local, target.address(), rkey, 2048));
            RcPair.assertFilled(target.segment(), 0, 2048, 12);
            // a bound type 2 window is not free: binding it again fails (IBA o10-37.2.30)
            p.b.qp.postSend(type2Bind(mw, (rkey & ~0xFF) | 0x43, target, 64));
            assertEquals(WcStatus.MW_BIND_ERR, p.await(p.b.cq).status);
        }
    }

    @Test
    void type2BindWithoutAKeyTakesTheNextOne() {
        try (RcPair p = Suite.pair().build()) {
            assumeTrue(p.b.ctx.queryDevice().supportsType2Windows(), "device has no type 2 memory windows");
            MemoryRegion target = p.b.mrBindable(4096), local = p.a.mrAll(64);
            MemoryWindow mw = p.b.pd.allocMemoryWindow(MwType.TYPE_2);
            int before = mw.rkey();
            p.b.qp.postSend(type2Bind(mw, 0, target, 64));
            int rkey = mw.rkey();
            assertEquals(before & ~0xFF, rkey & ~0xFF, "the window's index stays");
            assertNotEquals(before, rkey, "rkey() shows the new key as soon as the bind is posted");
            assertEquals(WcStatus.SUCCESS, p.await(p.b.cq).status);
            assertEquals(WcStatus.SUCCESS, write(p, local, target.address(), rkey, 64));
        }
    }

    @Test
    void sendWithInvalidateRevokesTheReceiversWindow() {
        try (RcPair p = Suite.pair().build()) {
            assumeTrue(p.b.ctx.queryDevice().supportsType2Windows(), "device has no type 2 memory windows");
            MemoryRegion target = p.b.mrBindable(4096), local = p.a.mrAll(4096), inbox = p.b.mrAll(64);
            MemoryWindow mw = p.b.pd.allocMemoryWindow(MwType.TYPE_2);
            int rkey = (mw.rkey() & ~0xFF) | 0x99;
            p.b.qp.postSend(type2Bind(mw, rkey, target, 4096));
            assertEquals(WcStatus.SUCCESS, p.await(p.b.cq).status);
            p.b.qp.postRecv(new RecvWorkRequest().wrId(5).buffer(inbox, 0, 64));
            SendWorkRequest sendInv = new SendWorkRequest()
                    .wrId(6)
                    .opcode(WrOpcode.SEND_WITH_INV)
                    .signaled(true)
                    .buffer(local, 0, 16);
            sendInv.invalidateRkey = rkey;
            p.a.qp.postSend(sendInv);
            assertEquals(WcStatus.SUCCESS, p.await(p.a.cq).status);
            WorkCompletion received = p.await(p.b.cq);
            assertEquals(WcStatus.SUCCESS, received.status, received::toString);
            // rxe writes the kernel's IB_WC_WITH_INVALIDATE (bit 2) into the user-space completion, where libibverbs
            // reads bit 2 as IBV_WC_IP_CSUM_OK: there the flag cannot be checked, the revocation below still is
            if (!p.b.ctx.device().name().startsWith("rxe")) {
                assertTrue(received.hasInv(), received::toString);
                assertEquals(rkey, received.immData, "the completion names the invalidated key");
            }
            assertEquals(WcStatus.REM_ACCESS_ERR, write(p, local, target.address(), rkey, 8));
        }
    }
}
