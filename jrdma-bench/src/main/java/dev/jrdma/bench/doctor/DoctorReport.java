package dev.jrdma.bench.doctor;

import java.util.List;

/** The doctor's checks as a report: text for a person ({@link #format}) or JSON for a program ({@link #toJson}). */
public final class DoctorReport {
    private DoctorReport() {}

    /**
     * {@return the human-readable report: a line per check, the details of those that are not OK (all with
     * {@code verbose}), their fixes, and the count of FAIL and WARN}
     *
     * @param checks  the outcomes, from {@link Doctor#run()}
     * @param verbose true to show every check's details
     */
    public static String format(List<Check> checks, boolean verbose) {
        StringBuilder sb = new StringBuilder();
        for (Check c : checks) {
            sb.append(String.format("[%-4s] %-42s %s%n", c.verdict(), c.title(), c.summary()));
            boolean show = verbose
                    || c.verdict() == Verdict.WARN
                    || c.verdict() == Verdict.FAIL
                    || c.id().equals("summary")
                    || c.id().equals("ports");
            if (show)
                for (String d : c.details()) sb.append("         ").append(d).append('\n');
            if (!c.fix().isEmpty() && c.verdict() != Verdict.OK)
                sb.append(c.verdict() == Verdict.INFO ? "         hint: " : "         fix: ")
                        .append(c.fix())
                        .append('\n');
        }
        long fail = checks.stream().filter(c -> c.verdict() == Verdict.FAIL).count();
        long warn = checks.stream().filter(c -> c.verdict() == Verdict.WARN).count();
        sb.append(String.format(
                "%d check%s: %d FAIL, %d WARN%n", checks.size(), checks.size() == 1 ? "" : "s", fail, warn));
        return sb.toString();
    }

    /**
     * {@return the JSON report: {@code {"checks":[{"id":..,"title":..,"verdict":..,"summary":..,"details":[..],"fix":..}],"fail":n,"warn":n}}}
     *
     * @param checks the outcomes, from {@link Doctor#run()}
     */
    public static String toJson(List<Check> checks) {
        StringBuilder sb = new StringBuilder("{\"checks\":[");
        for (int i = 0; i < checks.size(); i++) {
            Check c = checks.get(i);
            if (i > 0) sb.append(',');
            sb.append("\n  {\"id\":")
                    .append(q(c.id()))
                    .append(",\"title\":")
                    .append(q(c.title()))
                    .append(",\"verdict\":")
                    .append(q(c.verdict().name()))
                    .append(",\"summary\":")
                    .append(q(c.summary()))
                    .append(",\"details\":[");
            for (int j = 0; j < c.details().size(); j++)
                sb.append(j > 0 ? "," : "").append(q(c.details().get(j)));
            sb.append("],\"fix\":").append(q(c.fix())).append('}');
        }
        long fail = checks.stream().filter(c -> c.verdict() == Verdict.FAIL).count();
        long warn = checks.stream().filter(c -> c.verdict() == Verdict.WARN).count();
        return sb.append("\n],\"fail\":")
                .append(fail)
                .append(",\"warn\":")
                .append(warn)
                .append("}\n")
                .toString();
    }

    /**
     * {@return {@code s} as a JSON string literal, quoted, with quotes, backslashes and control characters escaped}
     *
     * @param s the text
     */
    public static String q(String s) {
        StringBuilder sb = new StringBuilder("\"");
        for (char ch : s.toCharArray()) {
            switch (ch) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                default -> {
                    if (ch < 0x20) sb.append(String.format("\\u%04x", (int) ch));
                    else sb.append(ch);
                }
            }
        }
        return sb.append('"').toString();
    }
}
