package dev.jrdma.bench.doctor;

/** A check's verdict. INFO: nothing wrong, nothing to fix, only a fact worth knowing. */
public enum Verdict {
    OK, WARN, FAIL, INFO
}
