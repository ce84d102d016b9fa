package dev.jrdma.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.util.EnumSet;
import org.junit.jupiter.api.Test;

/** The enums carry libibverbs' numbers, and every status explains itself. */
class ValuesTest {
    @Test
    void everyStatusHasItsLibibverbsCodeAnExplanationAndARemedy() {
        assertEquals(24, WcStatus.values().length);
        assertEquals(0, WcStatus.SUCCESS.code());
        assertEquals(5, WcStatus.WR_FLUSH_ERR.code());
        assertEquals(10, WcStatus.REM_ACCESS_ERR.code());
        assertEquals(12, WcStatus.RETRY_EXC_ERR.code());
        assertEquals(13, WcStatus.RNR_RETRY_EXC_ERR.code());
        assertEquals(23, WcStatus.TM_RNDV_INCOMPLETE.code());
        assertNull(WcStatus.of(24));
        for (WcStatus s : WcStatus.values()) {
            assertEquals(s, WcStatus.of(s.code()));
            assertEquals("IBV_WC_" + s.name(), s.cName());
            assertTrue(s.explanation().length() > 20, s.name());
            assertTrue(s.remedy().length() > 10, s.name());
            assertTrue(s.describe().contains(s.cName()));
        }
        // the article's table
        assertTrue(WcStatus.LOC_LEN_ERR.remedy().contains("MR"));
        assertTrue(WcStatus.LOC_QP_OP_ERR.remedy().contains("state transitions"));
        assertTrue(WcStatus.RNR_RETRY_EXC_ERR.remedy().contains("RNR retry count"));
    }

    @Test
    void opcodesAndFlagsUseLibibverbsValues() {
        assertEquals(0, WrOpcode.RDMA_WRITE.code);
        assertEquals(6, WrOpcode.ATOMIC_FETCH_AND_ADD.code);
        assertEquals(8, WrOpcode.BIND_MW.code);
        assertEquals(129, WcOpcode.RECV_RDMA_WITH_IMM.code);
        assertEquals(WcOpcode.RECV, WcOpcode.of(128));
        assertEquals(
                15,
                Access.toBits(
                        EnumSet.of(Access.LOCAL_WRITE, Access.REMOTE_WRITE, Access.REMOTE_READ, Access.REMOTE_ATOMIC)));
        assertEquals(EnumSet.of(Access.REMOTE_READ, Access.MW_BIND), Access.fromBits(20));
        SendWorkRequest wr = new SendWorkRequest().signaled(true).flag(SendFlag.INLINE, true);
        assertEquals(10, wr.flagBits());
        assertEquals(1 << 7, QpAttrMask.AV.bit);
        assertEquals(1 << 20, QpAttrMask.DEST_QPN.bit);
        assertEquals(Mtu.MTU_1024, Mtu.of(3));
        assertEquals(Mtu.MTU_256, Mtu.MTU_4096.min(Mtu.MTU_256));
    }

    @Test
    void qpAttrMaskFollowsTheSetters() {
        QpAttr a = new QpAttr().state(QpState.RTR).destQpNum(0x1234567).rqPsn(-1);
        assertEquals(EnumSet.of(QpAttrMask.STATE, QpAttrMask.DEST_QPN, QpAttrMask.RQ_PSN), a.mask());
        assertEquals(1 | (1 << 20) | (1 << 12), a.maskBits());
        assertEquals(0x234567, a.destQpNum(), "QP numbers are 24 bits");
        assertEquals(0xFFFFFF, a.rqPsn(), "PSNs are 24 bits");
    }

    @Test
    void gidsPrintAsIbvDevinfoAndMapIpv4() throws Exception {
        Gid g = Gid.fromInetAddress(InetAddress.getByName("127.0.0.2"));
        assertEquals("0000:0000:0000:0000:0000:ffff:7f00:0002", g.toString());
        assertTrue(g.isIpv4Mapped());
        assertEquals(InetAddress.getByName("127.0.0.2"), g.toInetAddress());
        assertEquals(g, Gid.parse(g.toString()));
        assertEquals(g, Gid.parse("::ffff:127.0.0.2"));
        assertFalse(Gid.parse("fe80::1").isIpv4Mapped());
        assertThrows(IllegalArgumentException.class, () -> Gid.parse("not-a-gid"));
        assertTrue(Gid.ZERO.isZero());
    }

    @Test
    void workRequestsCheckTheirSgeCount() {
        SendWorkRequest wr = new SendWorkRequest(2);
        assertThrows(IllegalArgumentException.class, () -> wr.numSge(3));
        wr.numSge(2).sge(0).set(0x1000, 10, 1);
        wr.sge(1).set(0x2000, 20, 1);
        assertEquals(30, wr.totalLength());
    }

    @Test
    void exceptionsNameVerbAndErrno() {
        VerbsException e = new VerbsException("ibv_reg_mr", VerbsException.ENOMEM, "raise the memlock limit");
        assertEquals("ibv_reg_mr failed (ENOMEM, cannot allocate memory): raise the memlock limit", e.getMessage());
        PostException p = new PostException("ibv_post_send", VerbsException.EINVAL, 2, "QP is in RESET");
        assertEquals(2, p.badIndex());
        assertTrue(p.getMessage().contains("#2"));
    }
}
