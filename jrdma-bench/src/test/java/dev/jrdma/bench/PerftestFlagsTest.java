package dev.jrdma.bench;

import static org.junit.jupiter.api.Assertions.*;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Every option of perftest 4.5's ib_* tools (the list read from its source, in perftest-4.5-flags.tsv) is accepted by
 * {@code jrdma perf}, or refused with a message that names the option and says why: never "unknown flag".
 */
class PerftestFlagsTest {
    record Row(String letter, String name, boolean hasArg, String example, String test) {}

    static List<Row> rows() throws Exception {
        List<Row> rows = new ArrayList<>();
        try (var in = PerftestFlagsTest.class.getResourceAsStream("/perftest-4.5-flags.tsv")) {
            assertNotNull(in, "perftest-4.5-flags.tsv on the test class path");
            for (String line : new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))
                    .lines()
                    .toList()) {
                if (line.isBlank() || line.startsWith("#")) continue;
                String[] f = line.split("\t");
                assertEquals(5, f.length, line);
                rows.add(new Row(f[0], f[1], f[2].equals("1"), f[3], f[4]));
            }
        }
        return rows;
    }

    /** What one spelling does: null when accepted, else the refusal's message. */
    static String outcome(String... args) {
        try {
            PerfOptions.parse(args);
            return null;
        } catch (IllegalArgumentException e) {
            return e.getMessage();
        }
    }

    @Test
    void everyPerftestOptionIsAcceptedOrRefusedWithAReason() throws Exception {
        List<Row> rows = rows();
        assertEquals(117, rows.size(), "perftest 4.5-0.17's long_options[] less its duplicate --source_ip");
        int accepted = 0, refused = 0;
        List<String> problems = new ArrayList<>();
        for (Row r : rows) {
            List<String[]> spellings = new ArrayList<>();
            String[] base = r.test.split(" ");
            if (r.hasArg) {
                spellings.add(SoftRdmaBenchTest.concat(base, new String[] {"--" + r.name, r.example}));
                spellings.add(SoftRdmaBenchTest.concat(base, new String[] {"--" + r.name + "=" + r.example}));
                if (!r.letter.equals("-")) {
                    spellings.add(SoftRdmaBenchTest.concat(base, new String[] {r.letter, r.example}));
                    spellings.add(SoftRdmaBenchTest.concat(
                            base, new String[] {r.letter + r.example})); // getopt: the value attached
                }
            } else {
                spellings.add(SoftRdmaBenchTest.concat(base, new String[] {"--" + r.name}));
                if (!r.letter.equals("-")) spellings.add(SoftRdmaBenchTest.concat(base, new String[] {r.letter}));
            }
            String first = null;
            for (int i = 0; i < spellings.size(); i++) {
                String[] args = spellings.get(i);
                String flagArg = args[base.length];
                String written = flagArg.startsWith("--") ? flagArg.split("=")[0] : flagArg.substring(0, 2);
                String why = outcome(args);
                if (i == 0) first = why;
                else if ((first == null) != (why == null))
                    problems.add(String.join(" ", args) + ": spellings disagree: " + first + " / " + why);
                if (why == null) continue;
                if (why.contains("unknown flag")) problems.add(String.join(" ", args) + ": " + why);
                else if (!why.contains(written))
                    problems.add(String.join(" ", args) + ": the refusal does not name " + written + ": " + why);
                else if (!why.contains("not supported by jrdma perf: ") || why.endsWith(": "))
                    problems.add(String.join(" ", args) + ": refused without the reason: " + why);
            }
            if (first == null) accepted++;
            else refused++;
            // what the parser does is what the table (and the README generated from it) says
            boolean tableRefuses = PerftestFlags.refusal(PerftestFlags.byName(r.name)) != null;
            if (tableRefuses != (first != null))
                problems.add("--" + r.name + ": the table says " + (tableRefuses ? "refused" : "accepted")
                        + ", the parser: " + first);
        }
        assertTrue(problems.isEmpty(), String.join("\n", problems));
        assertEquals(rows.size(), accepted + refused);
        assertTrue(accepted >= 35 && refused > 0, "accepted " + accepted + ", refused " + refused);
    }

    @Test
    void theTableInTheCodeIsPerftestsList() throws Exception {
        Set<String> listed = new HashSet<>();
        for (Row r : rows()) {
            listed.add(r.name);
            PerftestFlags.Option o = PerftestFlags.byName(r.name);
            assertNotNull(o, r.name);
            assertEquals(r.name, o.name(), "an exact name is not taken as a prefix");
            assertEquals(r.hasArg, o.hasArg(), r.name);
            assertEquals(r.letter.equals("-") ? 0 : r.letter.charAt(1), o.letter(), r.name);
        }
        Set<String> jrdmaOwn =
                Set.of("busy-poll", "quiet", "timeout", "accept-timeout", "poll-budget", "sizes", "html", "tests");
        for (PerftestFlags.Option o : PerftestFlags.all())
            assertTrue(
                    listed.contains(o.name()) || jrdmaOwn.contains(o.name()),
                    o.name() + " is in the code but not in perftest's list");
    }

    @Test
    void theReadmeTableListsEveryOption() throws Exception {
        java.nio.file.Path readme = java.nio.file.Path.of("README.md");
        assertTrue(java.nio.file.Files.exists(readme), "run from the module's directory");
        String text = java.nio.file.Files.readString(readme);
        for (Row r : rows()) assertTrue(text.contains("`--" + r.name + "` |"), "README's flag table lacks --" + r.name);
    }

    @Test
    void tosGoesWithRdmaCmOnly() {
        // perftest sets -T on -R's rdma_cm ids only, and refuses it without -R
        assertEquals(32, PerfOptions.parse("send_lat", "-R", "-T", "32", "host").tos);
        assertEquals(184, PerfOptions.parse("write_bw", "-R", "--tos=184").tos);
        assertEquals(-1, PerfOptions.parse("send_lat", "-R", "host").tos, "no -T: the kernel's default TOS");
        var e = assertThrows(IllegalArgumentException.class, () -> PerfOptions.parse("send_lat", "-T", "32", "host"));
        assertTrue(
                e.getMessage().startsWith("-T sets the type of service of -R's rdma_cm connections: add -R"),
                e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> PerfOptions.parse("send_lat", "-z", "-T", "32", "host"));
        assertTrue(e.getMessage().contains("add -R"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> PerfOptions.parse("send_lat", "-R", "-T", "256"));
        assertTrue(e.getMessage().contains("-T"), e.getMessage());
    }

    @Test
    void getoptSpellings() {
        // bundled letters, an attached value, a unique prefix of a long name
        PerfOptions o = PerfOptions.parse("write_bw", "-aF", "-q2", "--iter=7", "--report_g", "host");
        assertTrue(o.all);
        assertEquals(2, o.numQp);
        assertEquals(7, o.effectiveIters());
        assertTrue(o.reportGbits);
        var e = assertThrows(IllegalArgumentException.class, () -> PerfOptions.parse("write_bw", "--rep"));
        assertTrue(e.getMessage().contains("ambiguous"), e.getMessage());
        // perftest's usage() spellings that its long_options[] lacks
        assertTrue(PerfOptions.parse("send_lat", "--report-histogram").histogram);
        assertTrue(PerfOptions.parse("send_lat", "-V").version);
    }
}
