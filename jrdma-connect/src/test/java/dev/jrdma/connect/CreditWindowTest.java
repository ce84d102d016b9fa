package dev.jrdma.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** Credit flow control as a unit: what each side may send, and when credits go back. */
class CreditWindowTest {
    @Test
    void aSenderHasExactlyThePeersGrant() {
        CreditWindow w = new CreditWindow(8);
        assertFalse(w.canSend(), "nothing before the handshake");
        w.open(3);
        for (int i = 0; i < 3; i++) {
            assertTrue(w.canSend());
            w.used();
        }
        assertFalse(w.canSend());
        w.returned(2);
        assertEquals(2, w.sendCredits());
    }

    @Test
    void aPeerThatSendsBeyondItsGrantIsCaught() {
        CreditWindow w = new CreditWindow(4);
        w.open(1);
        for (int i = 0; i < 4; i++) assertTrue(w.arrived(), "message " + i + " had a credit");
        assertFalse(w.arrived(), "the fifth message had none");
        // credits returned to the peer let it send again, exactly as many
        w.consumed();
        w.gaveBack(w.toPiggyback());
        assertTrue(w.arrived());
        assertFalse(w.arrived());
    }

    @Test
    void creditsGoBackAloneAtHalfTheGrantOrWhenThePeerHasNone() {
        CreditWindow w = new CreditWindow(8);
        w.open(8);
        assertFalse(w.needsUpdate(false), "nothing to return");
        w.arrived();
        w.consumed();
        assertFalse(w.needsUpdate(false), "one of eight: wait for a send to carry it");
        for (int i = 0; i < 3; i++) {
            w.arrived();
            w.consumed();
        }
        assertTrue(w.needsUpdate(false), "half the grant is waiting");
        assertFalse(w.needsUpdate(true), "a send is about to carry them");
        assertEquals(4, w.toPiggyback());
        w.gaveBack(4);
        assertFalse(w.needsUpdate(false));

        // the peer used every credit it holds: even one freed buffer goes back at once
        CreditWindow empty = new CreditWindow(8);
        empty.open(8);
        for (int i = 0; i < 8; i++) empty.arrived();
        empty.consumed();
        assertTrue(empty.needsUpdate(false));
    }

    @Test
    void oneMessageCarriesAtMostSixteenBitsOfCredits() {
        CreditWindow w = new CreditWindow(100_000);
        w.open(1);
        for (int i = 0; i < 70_000; i++) {
            w.arrived();
            w.consumed();
        }
        assertEquals(CreditWindow.MAX_RETURN, w.toPiggyback());
        w.gaveBack(w.toPiggyback());
        assertEquals(70_000 - CreditWindow.MAX_RETURN, w.toPiggyback());
    }
}
