package dev.jrdma.bench.doctor;

import java.util.List;

/**
 * One environment check's outcome: what was looked at, the verdict, what was found and, when it is not OK,
 * what to do about it.
 *
 * @param id      stable identifier for scripts (e.g. {@code nic}, {@code memlock})
 * @param title   short human title
 * @param verdict OK / WARN / FAIL / INFO
 * @param summary one line: what was found
 * @param details further lines (devices, counters, ...), may be empty
 * @param fix     what to do (empty when nothing is to be done)
 */
public record Check(String id, String title, Verdict verdict, String summary, List<String> details, String fix) {
    /** Copies the details; a null fix becomes empty. */
    public Check {
        details = List.copyOf(details);
        fix = fix == null ? "" : fix;
    }

    /**
     * A check's outcome (the canonical constructor, shorter to read in the checks).
     *
     * @param id      stable identifier for scripts
     * @param title   short human title
     * @param v       the verdict
     * @param summary one line: what was found
     * @param details further lines, may be empty
     * @param fix     what to do, or empty/null when nothing is to be done
     * @return the outcome
     */
    public static Check of(String id, String title, Verdict v, String summary, List<String> details, String fix) {
        return new Check(id, title, v, summary, details, fix);
    }
}
