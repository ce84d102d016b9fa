package dev.jrdma.cli;

import dev.jrdma.bench.Perf;
import dev.jrdma.examples.FirstRdmaApp;
import dev.jrdma.nativeverbs.RcPingPong;
import java.io.BufferedReader;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Constructor;
import java.util.Arrays;

/**
 * One JVM for one side of many interop runs (the guest's {@code rxe-interop.sh}): under QEMU TCG a JVM takes 10-20 s
 * to start and its code stays cold, so the guest step runs every jrdma side of a namespace in one JVM, one after the
 * other. Reads commands from stdin, one a line:
 * <pre>
 *   LOG TOOL ARGS...    TOOL: perf (jrdma perf), rc_pingpong (RcPingPong), demo (FirstRdmaApp), interop (InteropMain),
 *                       jrdma (any jrdma command, e.g. devinfo)
 * </pre>
 * runs each to its end with {@code System.out} and {@code System.err} going to the file LOG, then prints
 * {@code DONE STATUS} on stdout (0: it passed; 1: it failed; 2: bad command). Ends at the end of stdin.
 */
public final class InteropSideMain {
    private InteropSideMain() {}

    public static void main(String[] args) throws Exception {
        PrintStream console = System.out;
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        for (String line; (line = in.readLine()) != null; ) {
            String[] f = line.trim().split("\\s+");
            if (f.length < 2) {
                console.println("DONE 2");
                continue;
            }
            String[] rest = Arrays.copyOfRange(f, 2, f.length);
            int status;
            try (PrintStream log = new PrintStream(new FileOutputStream(f[0]), true)) {
                System.setOut(log);
                System.setErr(log);
                status = run(f[1], rest, log);
            } finally {
                System.setOut(console);
                System.setErr(console);
            }
            console.println("DONE " + status);
            console.flush();
        }
    }

    private static int run(String tool, String[] args, PrintStream log) {
        try {
            return switch (tool) {
                case "perf" -> Perf.run(args, log, log);
                case "interop" -> InteropMain.run(args);
                case "rc_pingpong" -> {
                    RcPingPong.main(args); // prints its result; throws when the ping-pong fails
                    yield 0;
                }
                case "demo" -> demo(args, log);
                case "jrdma" -> Jrdma.commandLine().execute(args);
                default -> {
                    log.println("unknown tool " + tool + " (perf, interop, rc_pingpong, demo, jrdma)");
                    yield 2;
                }
            };
        } catch (Throwable t) {
            log.println("FAILED: " + t);
            t.printStackTrace(log);
            return 1;
        }
    }

    /**
     * {@code demo server|client [HOST] --device DEV --port P [--gid-index N]}: FirstRdmaApp's {@code main} ends the JVM when a step
     * fails, so its side is run here through the constructor {@code main} uses (package-private: reflection).
     */
    private static int demo(String[] args, PrintStream log) throws Exception {
        boolean server = args[0].equals("server");
        String host = null, device = null;
        int port = FirstRdmaApp.DEFAULT_PORT, gidIndex = FirstRdmaApp.DEFAULT_GID;
        for (int i = 1; i < args.length; i++) {
            switch (args[i]) {
                case "--port" -> port = Integer.parseInt(args[++i]);
                case "--device" -> device = args[++i];
                case "--gid-index" -> gidIndex = Integer.parseInt(args[++i]);
                default -> host = args[i];
            }
        }
        Constructor<FirstRdmaApp> make = FirstRdmaApp.class.getDeclaredConstructor(boolean.class, PrintStream.class);
        make.setAccessible(true);
        try (FirstRdmaApp app = make.newInstance(server, log)) {
            app.run(device, host, port, gidIndex);
        }
        return 0;
    }
}
