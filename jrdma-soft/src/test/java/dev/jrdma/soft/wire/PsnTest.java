package dev.jrdma.soft.wire;

import static org.junit.jupiter.api.Assertions.*;

import org.junit.jupiter.api.Test;

class PsnTest {
    @Test
    void wrapsAround() {
        assertEquals(0, Psn.next(0xFFFFFF));
        assertEquals(4, Psn.add(0xFFFFFE, 6));
        assertEquals(0xFFFFFF, Psn.add(0, -1));
    }

    @Test
    void comparesModulo2to24() {
        assertTrue(Psn.after(0x000002, 0xFFFFFE));
        assertTrue(Psn.before(0xFFFFFE, 0x000002));
        assertEquals(4, Psn.diff(0x000002, 0xFFFFFE));
        assertEquals(-4, Psn.diff(0xFFFFFE, 0x000002));
        assertEquals(0, Psn.compare(0x123456, 0x123456));
        assertTrue(Psn.after(0x7FFFFF, 0));
        assertTrue(Psn.before(0x800001, 0)); // more than half the space ahead = behind
        assertEquals(-0x800000, Psn.diff(0x800000, 0));
    }

    @Test
    void window() {
        assertTrue(Psn.inWindow(0xFFFFFF, 0xFFFFFE, 4));
        assertTrue(Psn.inWindow(1, 0xFFFFFE, 4));
        assertFalse(Psn.inWindow(2, 0xFFFFFE, 4));
        assertFalse(Psn.inWindow(0xFFFFFD, 0xFFFFFE, 4));
    }
}
