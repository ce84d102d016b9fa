package dev.jrdma.bench;

import java.io.PrintStream;

/** A status line that rewrites itself with \r on a terminal; silent when output is not a terminal. */
public final class Progress {
    private final PrintStream out;
    private final boolean on;
    private long last;
    private int width;

    /**
     * A status line on {@code out}.
     *
     * @param out     where it is printed
     * @param enabled false: every call does nothing
     */
    public Progress(PrintStream out, boolean enabled) {
        this.out = out;
        this.on = enabled;
    }

    /**
     * {@return a status line that shows unless {@code quiet} or the JVM has no console}
     *
     * @param out   where it is printed
     * @param quiet true for none (e.g. {@code --quiet})
     */
    public static Progress forTerminal(PrintStream out, boolean quiet) {
        return new Progress(out, !quiet && System.console() != null);
    }

    /** {@return whether the line is shown} */
    public boolean enabled() {
        return on;
    }

    /**
     * Shows the line in place of the previous one, at most 5 times a second (updates in between are dropped).
     *
     * @param line the text, without a line break
     */
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
