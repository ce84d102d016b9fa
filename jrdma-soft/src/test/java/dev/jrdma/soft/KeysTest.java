package dev.jrdma.soft;

import static org.junit.jupiter.api.Assertions.*;

import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.MemoryWindow;
import dev.jrdma.verbs.MwType;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WrOpcode;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Issue 8 §3: keys, key indices and QP numbers cannot be guessed from the order of creation or from another process. */
class KeysTest {

    @Test
    void theKeyByteOfARegistrationIsNotAFunctionOfItsIndex() {
        try (EngineRig rig = new EngineRig()) {
            int predictable = 0, n = 200;
            Set<Integer> bytes = new HashSet<>();
            int previousIndex = -1;
            for (int i = 0; i < n; i++) {
                MemoryRegion mr = rig.mr(64, Access.LOCAL_WRITE);
                int index = mr.rkey() >>> 8, keyByte = mr.rkey() & 0xFF;
                assertEquals(mr.lkey(), mr.rkey());
                if (keyByte == ((index * 151 + 0x5A) & 0xFF)) predictable++; // the old formula
                bytes.add(keyByte);
                if (previousIndex >= 0)
                    assertTrue(
                            RandomIdTable.distance(index, previousIndex) >= 1 << 16,
                            "indices are drawn at random, far apart");
                previousIndex = index;
            }
            assertTrue(predictable < n / 8, predictable + " of " + n + " key bytes follow from their index");
            assertTrue(bytes.size() > 100, "key bytes spread over the 256 values: " + bytes.size());
        }
    }

    @Test
    void aReusedIndexNeverGetsTheKeyByteItHadBefore() {
        try (EngineRig rig = new EngineRig()) {
            int index = rig.mr(64, Access.LOCAL_WRITE).rkey() >>> 8, last = -1;
            for (int i = 0; i < 2000; i++) {
                int key = rig.transport.freshKey(index);
                assertEquals(index, key >>> 8);
                assertNotEquals(last, key & 0xFF, "the same key byte twice in a row at one index");
                last = key & 0xFF;
            }
        }
    }

    @Test
    void firstKeysAndQpNumbersDifferFromProcessToProcess() {
        // each rig is a fresh device (a fresh transport), as in a new process
        Set<Integer> firstKeys = new HashSet<>(), firstQpns = new HashSet<>(), firstIndices = new HashSet<>();
        for (int i = 0; i < 6; i++) {
            try (EngineRig rig = new EngineRig()) {
                MemoryRegion mr = rig.mr(64, Access.LOCAL_WRITE);
                firstKeys.add(mr.rkey());
                firstIndices.add(mr.rkey() >>> 8);
                firstQpns.add(rig.qp.qpNum());
            }
        }
        assertTrue(firstKeys.size() > 1, "the first MR's key is the same every time: " + firstKeys);
        assertTrue(firstIndices.size() > 1, "key indices start at the same point every time: " + firstIndices);
        assertTrue(firstQpns.size() > 1, "QP numbers start at the same point every time: " + firstQpns);
    }

    @Test
    void everyWindowBindDrawsANewRandomKeyByte() {
        try (EngineRig rig = new EngineRig()) {
            MemoryRegion target = rig.mrBindable(4096);
            MemoryWindow mw = rig.pd.allocMemoryWindow(MwType.TYPE_1);
            int previous = mw.rkey(), plusOne = 0, n = 100;
            for (int i = 0; i < n; i++) {
                int rkey = rig.qp.bindMemoryWindow(
                        mw, i, true, target, target.address(), 64, java.util.EnumSet.of(Access.REMOTE_READ));
                assertEquals(WcStatus.SUCCESS, rig.poll().status);
                assertEquals(previous >>> 8, rkey >>> 8, "the window keeps its index");
                assertNotEquals(previous, rkey, "a bind changes the key");
                assertEquals(rkey, mw.rkey());
                if ((rkey & 0xFF) == ((previous + 1) & 0xFF)) plusOne++;
                previous = rkey;
            }
            assertTrue(plusOne < n / 8, plusOne + " of " + n + " binds just added one to the key byte");
            // a type 2 bind that names no key gets a random one too
            MemoryWindow mw2 = rig.pd.allocMemoryWindow(MwType.TYPE_2);
            Set<Integer> keys = new HashSet<>();
            for (int i = 0; i < 20; i++) {
                SendWorkRequest bind = new SendWorkRequest()
                        .opcode(WrOpcode.BIND_MW)
                        .wrId(100 + i)
                        .noBuffer()
                        .signaled(true);
                bind.bindMw = mw2;
                bind.bindMr = target;
                bind.bindAddr = target.address();
                bind.bindLength = 64;
                bind.bindAccess.add(Access.REMOTE_READ);
                rig.qp.postSend(bind);
                assertEquals(WcStatus.SUCCESS, rig.poll().status);
                keys.add(mw2.rkey());
                SendWorkRequest inv = new SendWorkRequest()
                        .opcode(WrOpcode.LOCAL_INV)
                        .wrId(200 + i)
                        .noBuffer()
                        .signaled(true);
                inv.invalidateRkey = mw2.rkey();
                rig.qp.postSend(inv);
                assertEquals(WcStatus.SUCCESS, rig.poll().status);
            }
            assertTrue(keys.size() > 10, "type 2 keys: " + keys);
        }
    }
}
