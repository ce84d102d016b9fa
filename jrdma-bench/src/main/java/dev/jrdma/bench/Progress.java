package dev.jrdma.bench;

import java.io.PrintStream;

/** A status line that rewrites itself with \r on a terminal; silent when output is not a terminal. */
public final class Progress {
    private final PrintStream out;
    private final boolean on;
    private long last;
    private int width;

    public Progress(PrintStream out, boolean enabled) {
        this.out = out;
        this.on = enabled;
    }

    /** Progress on the terminal unless quiet or stdout is not a console. */
    public static Progress forTerminal(PrintStream out, boolean quiet) {
        return new Progress(out, !quiet && System.console() != null);
    }

    public boolean enabled() {
        return on;
    }

    /** Shows the line at most 5 times a second. */
    public void update(String line) {
        if (!on) return;
        long now = System.nanoTime();
        if (now - last < 200_000_000L) return;
        last = now;
        String pad = line.length() < width ? " ".repeat(width - line.length()) : "";
        width = line.length();
        out.print("\r" + line + pad);
        out.flush();
    }

    /** Clears the line, so that report lines print cleanly. */
    public void clear() {
        if (!on || width == 0) return;
        out.print("\r" + " ".repeat(width) + "\r");
        out.flush();
        width = 0;
        last = 0;
    }
}
