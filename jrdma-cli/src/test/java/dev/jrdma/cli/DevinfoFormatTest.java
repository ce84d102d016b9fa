package dev.jrdma.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** jrdma devinfo's formats that must match ibv_devinfo's, and the field-by-field comparison the guest runs. */
class DevinfoFormatTest {

    private static String text(String addr) throws Exception {
        return DevinfoCommand.ipv6Text(
                InetAddress.getByName(addr).getAddress().length == 16
                        ? InetAddress.getByName(addr).getAddress()
                        : mapped(InetAddress.getByName(addr).getAddress()));
    }

    private static byte[] mapped(byte[] v4) {
        byte[] b = new byte[16];
        b[10] = (byte) 0xFF;
        b[11] = (byte) 0xFF;
        System.arraycopy(v4, 0, b, 12, 4);
        return b;
    }

    @Test
    void gidsAreWrittenAsInetNtopWritesThem() throws Exception {
        assertEquals("fe80::88b0:f6ff:fefb:6d87", text("fe80:0:0:0:88b0:f6ff:fefb:6d87"));
        assertEquals("::ffff:10.99.0.1", text("10.99.0.1"));
        assertEquals("::", DevinfoCommand.ipv6Text(new byte[16]));
        assertEquals("2001:db8::1", text("2001:db8:0:0:0:0:0:1"));
        assertEquals("2001:db8:0:1:1:1:1:1", text("2001:db8:0:1:1:1:1:1"), "a single zero group stays");
        assertEquals("1::", text("1:0:0:0:0:0:0:0"));
        assertEquals("1:0:0:1::", text("1:0:0:1:0:0:0:0"), "the longest run is compressed");
    }

    @Test
    void comparisonListsEveryDifferenceAndKnowsTheExpectedOnes() {
        String ibv =
                "hca_id:\trxe0\n\tfw_ver:\t\t\t\t0.0.0\n\tdevice_cap_flags:\t\t0x00000006\n\t\t\t\t\tBAD_PKEY_CNTR\n\t\t\t\t\tBAD_QKEY_CNTR\n"
                        + "\trc_odp_caps:\n\t\t\t\t\tNO SUPPORT\n\tcore clock not supported\n\t\tport:\t1\n\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n"
                        + "\t\t\tGID[  1]:\t\t::ffff:10.99.0.1, RoCE v2\n";
        Map<String, String> parsed = DevinfoCompareMain.parse(ibv);
        assertEquals("0x00000006 BAD_PKEY_CNTR BAD_QKEY_CNTR", parsed.get("device/device_cap_flags"));
        assertEquals("::ffff:10.99.0.1, RoCE v2", parsed.get("port 1/GID[  1]"));
        assertEquals("PORT_ACTIVE (4)", parsed.get("port 1/state"));
        String jrdma =
                "hca_id:\trxe0\n\tfw_ver:\t\t\t\t0.0.1\n\tdevice_cap_flags:\t\t0x00000006\n\t\t\t\t\tBAD_PKEY_CNTR\n\t\t\t\t\tBAD_QKEY_CNTR\n"
                        + "\t\tport:\t1\n\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n\t\t\tGID[  1]:\t\t::ffff:10.99.0.1, RoCE v2\n\t\t\textra:\t1\n";
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        // no field is expected to differ on rxe0 any more; an entry of EXPECTED turns a difference into an expected one
        DevinfoCompareMain.EXPECTED.put("device/rc_odp_caps", "a reason");
        List<String> unexpected;
        try {
            unexpected = DevinfoCompareMain.compare(
                    parsed, DevinfoCompareMain.parse(jrdma), new PrintStream(out, true, StandardCharsets.UTF_8));
        } finally {
            DevinfoCompareMain.EXPECTED.remove("device/rc_odp_caps");
        }
        assertEquals(
                List.of("device/fw_ver differs", "device/core clock not supported missing", "port 1/extra extra"),
                unexpected,
                out.toString(StandardCharsets.UTF_8));
        assertTrue(
                out.toString(StandardCharsets.UTF_8).contains("expected: device/rc_odp_caps missing"),
                out.toString(StandardCharsets.UTF_8));
    }
}
