package dev.jrdma.cli;

import static org.junit.jupiter.api.Assertions.*;

import dev.jrdma.verbs.DeviceAttrEx;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@code jrdma devinfo -v} on the software device prints every line ibv_devinfo -v prints (the list in
 * ibv-devinfo-v-fields.txt, read from rdma-core's devinfo.c), in ibv_devinfo's order, with the features the soft
 * device lacks printed as ibv_devinfo prints a device without them.
 */
class DevinfoFieldsTest {
    record Field(String section, String names, boolean conditional) {}

    static List<Field> fields() throws Exception {
        List<Field> l = new ArrayList<>();
        try (var in = DevinfoFieldsTest.class.getResourceAsStream("/ibv-devinfo-v-fields.txt")) {
            assertNotNull(in);
            for (String line : new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))
                    .lines()
                    .toList()) {
                if (line.isBlank() || line.startsWith("#")) continue;
                String[] f = line.split("\t");
                boolean cond = f[1].startsWith("?");
                l.add(new Field(f[0], cond ? f[1].substring(1) : f[1], cond));
            }
        }
        return l;
    }

    /** The name a printed line gives: the text before its first ':', or the whole trimmed line. */
    static String nameOf(String line) {
        String t = line.strip();
        if (t.startsWith("GID[")) return t.substring(0, t.indexOf(']') + 1);
        int colon = t.indexOf(':');
        return colon < 0 ? t : t.substring(0, colon);
    }

    @Test
    void everyFieldOfIbvDevinfoInItsOrder() throws Exception {
        CliTest.Run r = CliTest.run("devinfo", "-d", "soft_lo", "-v");
        assertEquals(0, r.exit(), r.out());
        List<String> names = new ArrayList<>();
        for (String line : r.out().split("\n")) if (!line.isBlank()) names.add(nameOf(line));
        int at = 0;
        List<String> missing = new ArrayList<>();
        for (Field f : fields()) {
            int found = -1;
            for (String alt : f.names().split("\\|")) {
                int i = names.subList(at, names.size()).indexOf(alt);
                if (i >= 0 && (found < 0 || at + i < found)) found = at + i;
            }
            if (found < 0) {
                if (!f.conditional()) missing.add(f.section() + "/" + f.names());
                continue;
            }
            at = found + 1;
        }
        assertTrue(missing.isEmpty(), "missing or out of order: " + missing + "\n" + r.out());
    }

    @Test
    void theSoftDevicesMissingFeaturesReadAsIbvDevinfoPrintsThem() throws Exception {
        String out = CliTest.run("devinfo", "-d", "soft_lo", "-v").out();
        assertTrue(
                out.contains(
                        "\tgeneral_odp_caps:\n\trc_odp_caps:\n\t\t\t\t\tNO SUPPORT\n\tuc_odp_caps:\n\t\t\t\t\tNO SUPPORT\n"),
                out);
        assertTrue(out.contains("\tcompletion_timestamp_mask not supported\n\tcore clock not supported\n"), out);
        assertTrue(out.contains("\ttso_caps:\n\t\tmax_tso:\t\t\t0\n\trss_caps:\n"), out);
        assertTrue(out.contains("\t\tqp_rate_limit_max:\t0kbps\n\ttag matching not supported\n"), out);
        // device_cap_flags_ex carries device_cap_flags in its low 32 bits, in %PRIX64
        var m = java.util.regex.Pattern.compile("\tdevice_cap_flags:\t\t0x([0-9a-f]{8})\n")
                .matcher(out);
        assertTrue(m.find(), out);
        long flags = Long.parseLong(m.group(1), 16);
        assertTrue(
                out.contains("\tdevice_cap_flags_ex:\t\t0x"
                        + Long.toHexString(flags).toUpperCase(java.util.Locale.ROOT) + "\n"),
                out);
    }

    @Test
    void extendedFeaturesPrintInIbvDevinfosFormats() {
        var buf = new java.io.ByteArrayOutputStream();
        var ps = new java.io.PrintStream(buf, true, StandardCharsets.UTF_8);
        DevinfoCommand.printExtended(
                ps,
                new DeviceAttrEx(
                        3,
                        0x3f,
                        0,
                        1 | 2,
                        0,
                        0xffffffffffffL,
                        156250,
                        (1L << 34) | 0x1234,
                        65536,
                        1 << 4,
                        0,
                        0,
                        0,
                        0,
                        0,
                        0,
                        0,
                        0,
                        0,
                        2,
                        0,
                        0,
                        0,
                        0,
                        0,
                        0,
                        0,
                        1 << 20,
                        0,
                        0,
                        0,
                        0));
        String out = buf.toString(StandardCharsets.UTF_8);
        assertTrue(
                out.startsWith(
                        "\tgeneral_odp_caps:\n\t\t\t\t\tODP_SUPPORT\n\t\t\t\t\tODP_SUPPORT_IMPLICIT\n\trc_odp_caps:\n\t\t\t\t\tSUPPORT_SEND\n"),
                out);
        assertTrue(
                out.contains(
                        "\t\t\t\t\tSUPPORT_SRQ\n\tuc_odp_caps:\n\t\t\t\t\tNO SUPPORT\n\tud_odp_caps:\n\t\t\t\t\tSUPPORT_SEND\n\t\t\t\t\tSUPPORT_RECV\n"),
                out);
        assertTrue(
                out.contains(
                        "\tcompletion timestamp_mask:\t\t\t0x0000ffffffffffff\n\thca_core_clock:\t\t\t156250kHZ\n"),
                out);
        assertTrue(out.contains("\traw packet caps:\n\t\t\t\t\tScatter FCS offload\n"), out);
        assertTrue(out.contains("\tdevice_cap_flags_ex:\t\t0x400001234\n\t\t\t\t\tRAW_SCATTER_FCS\n"), out);
        assertTrue(out.contains("\t\tmax_tso:\t\t\t65536\n\t\tsupported_qp:\n\t\t\t\t\tSUPPORT_UD\n"), out);
        assertTrue(out.contains("\ttag matching not supported\n"), out);
        assertTrue(out.endsWith("\tmaximum available device memory:\t1048576Bytes\n\n"), out);
    }
}
