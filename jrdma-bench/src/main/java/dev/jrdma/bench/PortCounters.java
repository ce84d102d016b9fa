package dev.jrdma.bench;

import dev.jrdma.verbs.Context;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * perftest's -W (--report-counters): the named counters of the port, read when the run is set up and after each
 * report line, which gets their changes as {@code "\tNAME=DELTA"} lines and an empty line. A name is a path under
 * {@code /sys/class/infiniband/DEV/ports/PORT/} (e.g. {@code counters/port_xmit_data}), as perftest reads it; where
 * there is no such file (the software device), the device's own counter of that name (or of its last component).
 */
final class PortCounters {
    private final List<String> names = new ArrayList<>();
    private final List<Path> files = new ArrayList<>();
    private final Context ctx;
    private long[] last;

    private PortCounters(Context ctx) {
        this.ctx = ctx;
    }

    static PortCounters open(String list, Context ctx, String device, int port) {
        PortCounters c = new PortCounters(ctx);
        Map<String, Long> own = ctx.counters();
        for (String name : list.split(",")) {
            if (name.isBlank()) continue;
            Path sysfs = Path.of("/sys/class/infiniband", device, "ports", Integer.toString(port), name);
            String key = name.substring(name.lastIndexOf('/') + 1);
            if (Files.isReadable(sysfs)) c.files.add(sysfs);
            else if (own.containsKey(name) || own.containsKey(key)) c.files.add(null);
            else
                throw new BenchException("-W: " + device + " port " + port + " has no counter '" + name + "' (no "
                        + sysfs
                        + (own.isEmpty() ? ")" : "; its own counters: " + String.join(", ", own.keySet()) + ")"));
            c.names.add(name);
        }
        c.last = c.read();
        return c;
    }

    private long[] read() {
        Map<String, Long> own = null;
        long[] v = new long[names.size()];
        for (int i = 0; i < v.length; i++) {
            String name = names.get(i);
            if (files.get(i) != null) {
                try {
                    v[i] = Long.parseLong(Files.readString(files.get(i)).trim());
                } catch (Exception e) {
                    v[i] = last != null ? last[i] : 0;
                }
            } else {
                if (own == null) own = ctx.counters();
                Long x = own.getOrDefault(name, own.get(name.substring(name.lastIndexOf('/') + 1)));
                v[i] = x != null ? x : 0;
            }
        }
        return v;
    }

    /** Prints each counter's change since the last reading, as perftest's counters_print. */
    void print(PrintStream out) {
        long[] now = read();
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < now.length; i++)
            sb.append('\t')
                    .append(names.get(i))
                    .append('=')
                    .append(now[i] - last[i])
                    .append('\n');
        last = now;
        out.println(sb);
    }
}
