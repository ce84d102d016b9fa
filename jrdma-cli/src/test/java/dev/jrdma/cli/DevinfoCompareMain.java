package dev.jrdma.cli;

import dev.jrdma.verbs.Verbs;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Compares {@code jrdma devinfo -v -d DEV} with {@code ibv_devinfo -v -d DEV} field by field (run it in the
 * Soft-RoCE guest: {@code java -cp CP dev.jrdma.cli.DevinfoCompareMain rxe0}). Prints every difference; exits 1 when
 * one is not in {@link #EXPECTED}, the fields jrdma leaves out on purpose, each with its reason.
 */
public final class DevinfoCompareMain {
    /**
     * Fields of ibv_devinfo -v that jrdma does not print, and why: none since the native provider reads
     * ibv_query_device_ex (the extended section must match too).
     */
    static final Map<String, String> EXPECTED = new LinkedHashMap<>();

    public static void main(String[] args) throws Exception {
        String dev = args.length > 0 ? args[0] : "rxe0";
        Process p = new ProcessBuilder("ibv_devinfo", "-v", "-d", dev)
                .redirectErrorStream(true)
                .start();
        String ibv = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
            System.out.println("ibv_devinfo -v -d " + dev + " failed:\n" + ibv);
            System.exit(2);
        }
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        DevinfoCommand.print(new PrintStream(buf, true, StandardCharsets.UTF_8), Verbs.device(dev), 0, true);
        String jrdma = buf.toString(StandardCharsets.UTF_8);
        List<String> unexpected = compare(parse(ibv), parse(jrdma), System.out);
        System.out.println(
                unexpected.isEmpty()
                        ? "devinfo: jrdma devinfo -v matches ibv_devinfo -v on " + dev
                                + " (apart from the expected differences above)"
                        : unexpected.size() + " unexpected difference(s):\n  " + String.join("\n  ", unexpected));
        System.exit(unexpected.isEmpty() ? 0 : 1);
    }

    /**
     * ibv_devinfo's output as "section/field" -> value: sections are "device" and "port N"; a line without a colon
     * that is indented further (a flag name, "NO SUPPORT") belongs to the field above it.
     */
    static Map<String, String> parse(String text) {
        Map<String, String> fields = new LinkedHashMap<>();
        String section = "device", last = null;
        for (String line : text.split("\n")) {
            if (line.isBlank()) continue;
            int tabs = 0;
            while (tabs < line.length() && line.charAt(tabs) == '\t') tabs++;
            String body = line.trim();
            int colon = body.indexOf(':');
            if (body.startsWith("port:")) {
                section = "port " + body.substring(5).trim();
                last = null;
                continue;
            }
            if (colon < 0) {
                if (last != null && tabs >= 4) fields.merge(last, body, (a, b) -> (a + " " + b).trim());
                else fields.put(section + "/" + body, "");
                continue;
            }
            last = section + "/" + body.substring(0, colon).trim();
            fields.put(last, body.substring(colon + 1).trim().replaceAll("\\s+", " "));
        }
        return fields;
    }

    /** Prints each difference; returns the unexpected ones. */
    static List<String> compare(Map<String, String> ibv, Map<String, String> jrdma, PrintStream out) {
        List<String> unexpected = new ArrayList<>();
        int same = 0, expected = 0;
        for (Map.Entry<String, String> e : ibv.entrySet()) {
            String k = e.getKey();
            if (!jrdma.containsKey(k)) {
                String why = EXPECTED.get(k);
                out.println((why != null ? "expected: " : "UNEXPECTED: ") + k + " missing (ibv_devinfo: '"
                        + e.getValue() + "')" + (why != null ? ": " + why : ""));
                if (why == null) unexpected.add(k + " missing");
                else expected++;
            } else if (!jrdma.get(k).equals(e.getValue())) {
                String why = EXPECTED.get(k);
                out.println((why != null ? "expected: " : "UNEXPECTED: ") + k + ": ibv_devinfo '" + e.getValue()
                        + "', jrdma '" + jrdma.get(k) + "'" + (why != null ? ": " + why : ""));
                if (why == null) unexpected.add(k + " differs");
                else expected++;
            } else {
                same++;
            }
        }
        for (String k : jrdma.keySet()) {
            if (!ibv.containsKey(k)) {
                String why = EXPECTED.get(k);
                out.println((why != null ? "expected: " : "UNEXPECTED: ") + k + " printed by jrdma only ('"
                        + jrdma.get(k) + "')" + (why != null ? ": " + why : ""));
                if (why == null) unexpected.add(k + " extra");
                else expected++;
            }
        }
        out.println(
                same + " fields equal, " + expected + " expected differences, " + unexpected.size() + " unexpected");
        return unexpected;
    }
}
