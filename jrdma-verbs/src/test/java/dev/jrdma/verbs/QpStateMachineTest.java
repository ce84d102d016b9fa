package dev.jrdma.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class QpStateMachineTest {
    private static QpAttr init() {
        return new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).access(Access.REMOTE_WRITE);
    }

    private static QpAttr rtr() {
        return new QpAttr()
                .state(QpState.RTR)
                .ah(new AhAttr())
                .pathMtu(Mtu.MTU_1024)
                .destQpNum(5)
                .rqPsn(1)
                .maxDestRdAtomic(1)
                .minRnrTimer(12);
    }

    private static QpAttr rts() {
        return new QpAttr()
                .state(QpState.RTS)
                .timeout(14)
                .retryCnt(7)
                .rnrRetry(7)
                .sqPsn(1)
                .maxRdAtomic(1);
    }

    @Test
    void theConnectPathIsLegal() {
        assertEquals(QpState.INIT, QpStateMachine.check(QpType.RC, QpState.RESET, init()));
        assertEquals(QpState.RTR, QpStateMachine.check(QpType.RC, QpState.INIT, rtr()));
        assertEquals(QpState.RTS, QpStateMachine.check(QpType.RC, QpState.RTR, rts()));
        assertEquals(QpState.RTS, QpStateMachine.check(QpType.RC, QpState.RTS, new QpAttr().minRnrTimer(3)));
    }

    @Test
    void anyStateMayGoToResetOrError() {
        for (QpState s : QpState.values()) {
            assertEquals(QpState.ERR, QpStateMachine.check(QpType.RC, s, new QpAttr().state(QpState.ERR)));
            assertEquals(QpState.RESET, QpStateMachine.check(QpType.RC, s, new QpAttr().state(QpState.RESET)));
        }
    }

    @Test
    void skippingAStateNamesTheLegalTargets() {
        VerbsException e =
                assertThrows(VerbsException.class, () -> QpStateMachine.check(QpType.RC, QpState.RESET, rts()));
        assertTrue(e.getMessage().contains("cannot go from RESET to RTS"), e.getMessage());
        assertTrue(e.getMessage().contains("[RESET, INIT, ERR]"), e.getMessage());
        assertEquals("ibv_modify_qp", e.verb());
        assertEquals(VerbsException.EINVAL, e.errno());
    }

    @Test
    void missingRequiredAttributesAreNamed() {
        VerbsException e = assertThrows(
                VerbsException.class,
                () -> QpStateMachine.check(
                        QpType.RC,
                        QpState.INIT,
                        new QpAttr().state(QpState.RTR).destQpNum(3).pathMtu(Mtu.MTU_256)));
        assertTrue(e.getMessage().contains("missing AV, RQ_PSN, MIN_RNR_TIMER, MAX_DEST_RD_ATOMIC"), e.getMessage());
    }

    @Test
    void attributesATransitionDoesNotTakeAreRefused() {
        VerbsException e = assertThrows(
                VerbsException.class, () -> QpStateMachine.check(QpType.RC, QpState.RESET, init().sqPsn(4)));
        assertTrue(e.getMessage().contains("does not take SQ_PSN"), e.getMessage());
        // RTS->RTS may not change the timeout
        assertThrows(VerbsException.class, () -> QpStateMachine.check(QpType.RC, QpState.RTS, new QpAttr().timeout(3)));
    }

    @Test
    void wrongCurrentStateIsRefused() {
        VerbsException e = assertThrows(
                VerbsException.class, () -> QpStateMachine.check(QpType.RC, QpState.RTR, rts().curState(QpState.INIT)));
        assertTrue(e.getMessage().contains("cur_state"), e.getMessage());
    }

    @Test
    void ucDoesNotNeedRdAtomicOrRnrAttributes() {
        QpAttr ucRtr = new QpAttr()
                .state(QpState.RTR)
                .ah(new AhAttr())
                .pathMtu(Mtu.MTU_1024)
                .destQpNum(5)
                .rqPsn(1);
        assertEquals(QpState.RTR, QpStateMachine.check(QpType.UC, QpState.INIT, ucRtr));
        assertThrows(VerbsException.class, () -> QpStateMachine.check(QpType.RC, QpState.INIT, ucRtr));
    }
}
