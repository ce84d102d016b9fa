package dev.jrdma.nativeverbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.verbs.Completions;
import dev.jrdma.verbs.PostException;
import dev.jrdma.verbs.PreparedSend;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendFlag;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.WcOpcode;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The data path over the null provider (on any machine with gcc and libibverbs-dev): what jrdma's post writes is
 * what a provider's post_send reads through the ops table, and what its poll_cq returns is what jrdma's poll reads.
 */
class NullProviderTest {
    static final Path DIR = Path.of("target", "nullverbs");
    static Arena arena;
    static MemorySegment mem;
    static NullProvider np;

    @BeforeAll
    @SuppressWarnings("MustBeClosedChecker") // the arena is a field, closed by free() after all tests
    static void open() throws Exception {
        Assumptions.assumeTrue(
                NullProvider.available(DIR), "skipped: -Djrdma.skipLayoutTest is set and no null provider was built");
        arena = Arena.ofShared();
        mem = arena.allocate(4096, 4096);
        np = NullProvider.open(NullProvider.build(DIR), mem);
    }

    @AfterAll
    static void free() {
        if (np != null) np.free();
        if (arena != null) arena.close();
    }

    @Test
    void postSendWritesTheWorkRequestTheProviderReads() {
        np.set(true, true);
        long before = np.posts();
        SendWorkRequest wr = new SendWorkRequest()
                .wrId(0xabcdefL)
                .opcode(WrOpcode.RDMA_WRITE_WITH_IMM)
                .buffer(np.mr, 128, 64)
                .remote(np.mr.address() + 1024, np.mr.rkey())
                .immData(0x01020304)
                .signaled(true);
        np.qp.postSend(wr);
        assertEquals(before + 1, np.posts());
        NullProvider.Seen s = np.lastSend();
        assertEquals(0xabcdefL, s.wrId());
        assertEquals(WrOpcode.RDMA_WRITE_WITH_IMM.code, s.opcode());
        assertEquals(1, s.numSge());
        assertEquals(1, s.chain());
        assertEquals(SendFlag.SIGNALED.bit, s.sendFlags());
        assertEquals(np.mr.address() + 128, s.addr());
        assertEquals(64, s.length());
        assertEquals(np.mr.lkey(), s.lkey());
        assertEquals(np.mr.address() + 1024, s.remoteAddr());
        assertEquals(np.mr.rkey(), s.rkey());
        assertEquals(Integer.reverseBytes(0x01020304), s.immData(), "imm_data is __be32 in ibv_send_wr");

        // a chain of three goes down in one call, linked by next
        SendWorkRequest b = new SendWorkRequest()
                .wrId(2)
                .opcode(WrOpcode.RDMA_WRITE)
                .buffer(np.mr, 0, 8)
                .remote(np.mr.address(), np.mr.rkey());
        SendWorkRequest c = new SendWorkRequest()
                .wrId(3)
                .opcode(WrOpcode.RDMA_WRITE)
                .buffer(np.mr, 0, 8)
                .remote(np.mr.address(), np.mr.rkey());
        wr.next = b;
        b.next = c;
        np.qp.postSend(wr);
        assertEquals(before + 2, np.posts());
        assertEquals(3, np.lastSend().chain());
        np.set(true, false);
    }

    @Test
    void aPreparedSendPostsItsSnapshotWithTheWrIdOfEachPost() {
        np.set(true, true);
        long before = np.posts();
        SendWorkRequest wr = new SendWorkRequest()
                .wrId(41)
                .opcode(WrOpcode.RDMA_WRITE_WITH_IMM)
                .buffer(np.mr, 64, 32)
                .remote(np.mr.address() + 2048, np.mr.rkey())
                .immData(0x0a0b0c0d)
                .signaled(true);
        PreparedSend ps = np.qp.prepareSend(wr);
        assertEquals(np.qp, ps.qp());
        wr.wrId(5).opcode(WrOpcode.SEND).buffer(np.mr, 0, 1).signaled(false); // changes nothing prepared
        for (long id : new long[] {0, 42, 43}) {
            if (id == 0) ps.post();
            else ps.post(id);
            NullProvider.Seen s = np.lastSend();
            assertEquals(id == 0 ? 41 : id, s.wrId());
            assertEquals(WrOpcode.RDMA_WRITE_WITH_IMM.code, s.opcode());
            assertEquals(1, s.numSge());
            assertEquals(1, s.chain());
            assertEquals(SendFlag.SIGNALED.bit, s.sendFlags());
            assertEquals(np.mr.address() + 64, s.addr());
            assertEquals(32, s.length());
            assertEquals(np.mr.lkey(), s.lkey());
            assertEquals(np.mr.address() + 2048, s.remoteAddr());
            assertEquals(np.mr.rkey(), s.rkey());
            assertEquals(Integer.reverseBytes(0x0a0b0c0d), s.immData());
        }
        ps.post();
        assertEquals(41, np.lastSend().wrId(), "post() keeps the prepared wr_id after a post(wrId)");
        assertEquals(before + 4, np.posts());

        // a chain goes down in one call; the first takes the wr_id of post(wrId), the others keep theirs
        SendWorkRequest b = new SendWorkRequest().wrId(2).opcode(WrOpcode.SEND).noBuffer();
        SendWorkRequest a = new SendWorkRequest()
                .wrId(1)
                .opcode(WrOpcode.RDMA_WRITE)
                .buffer(np.mr, 0, 8)
                .remote(np.mr.address(), np.mr.rkey())
                .next(b);
        np.qp.prepareSend(a).post(9);
        assertEquals(2, np.lastSend().chain());
        assertEquals(9, np.lastSend().wrId());

        // what postSend refuses for its contents is refused when prepared; BIND_MW is not preparable
        SendWorkRequest wide = new SendWorkRequest(8).opcode(WrOpcode.SEND).numSge(8);
        for (int i = 0; i < 8; i++) wide.sge(i).set(np.mr, 0, 1);
        PostException tooMany = assertThrows(PostException.class, () -> np.qp.prepareSend(wide));
        assertTrue(tooMany.getMessage().contains("max_send_sge"), tooMany.getMessage());
        PostException bind = assertThrows(
                PostException.class, () -> np.qp.prepareSend(a.next(new SendWorkRequest().opcode(WrOpcode.BIND_MW))));
        assertEquals(1, bind.badIndex());
        assertTrue(bind.getMessage().contains("BIND_MW"), bind.getMessage());
        assertEquals(before + 5, np.posts(), "a refused prepare posts nothing");
        np.set(true, false);
    }

    @Test
    void postRecvWritesTheWorkRequestTheProviderReads() {
        np.set(true, true);
        long before = np.recvs();
        np.qp.postRecv(new RecvWorkRequest().wrId(99).buffer(np.mr, 256, 512));
        assertEquals(before + 1, np.recvs());
        NullProvider.Seen s = np.lastRecv();
        assertEquals(99, s.wrId());
        assertEquals(1, s.numSge());
        assertEquals(np.mr.address() + 256, s.addr());
        assertEquals(512, s.length());
        assertEquals(np.mr.lkey(), s.lkey());
        np.set(true, false);
    }

    @Test
    void pollReadsThePreparedCompletion() {
        WorkCompletion[] wcs = WorkCompletion.array(4);
        np.set(true, false);
        assertEquals(1, np.cq.poll(wcs, 4), "the null poll_cq returns one completion per call");
        assertEquals(7, wcs[0].wrId);
        assertEquals(WcStatus.SUCCESS, wcs[0].status);
        assertEquals(WcOpcode.RDMA_WRITE, wcs[0].opcode);
        assertEquals(64, wcs[0].byteLen);
        assertEquals(0x11, wcs[0].qpNum);
        np.set(false, false);
        assertEquals(0, np.cq.poll(wcs, 4));
        np.set(true, false);
    }

    @Test
    void pollIntoCompletionsLeavesTheProvidersEntryInPlace() {
        Completions in = new Completions(4);
        np.set(true, false);
        assertEquals(1, np.cq.poll(in, 4));
        assertEquals(7, in.wrId(0));
        assertTrue(in.isSuccess(0));
        assertEquals(WcStatus.SUCCESS, in.status(0));
        assertEquals(WcOpcode.RDMA_WRITE, in.opcode(0));
        assertEquals(64, in.byteLen(0));
        assertEquals(0x11, in.qpNum(0));
        WorkCompletion[] wcs = WorkCompletion.array(1);
        np.cq.poll(wcs, 1);
        assertEquals(wcs[0].toString(), in.copyTo(0, new WorkCompletion()).toString());
        assertEquals(0, np.cq.poll(in, 0));
        np.set(false, false);
        assertEquals(0, np.cq.poll(in, 4));
        np.set(true, false);
    }

    @Test
    void theCLoopAndTheFfmLoopPostAndPollThroughTheSameOps() {
        np.set(true, false);
        long p0 = np.posts(), q0 = np.polls();
        assertEquals(1000, np.cLoop(1000));
        assertEquals(1000, np.ffmLoop(1000));
        assertEquals(p0 + 2000, np.posts());
        assertEquals(q0 + 2000, np.polls());
    }
}
