package dev.jrdma.nativeverbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.lang.foreign.StructLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * Compiles a C program against the installed {@code infiniband/verbs.h} that prints sizeof/offsetof of every
 * struct and named field in {@link Layouts}, and compares them with the Java layouts. Needs gcc and
 * libibverbs-dev; set {@code -Djrdma.skipLayoutTest} to skip where they cannot be installed.
 */
class LayoutConformanceTest {

    @Test
    void javaLayoutsMatchTheInstalledHeader() throws Exception {
        Assumptions.assumeTrue(
                System.getProperty("jrdma.skipLayoutTest") == null, "skipped: -Djrdma.skipLayoutTest is set");
        Path gcc = which("gcc");
        if (gcc == null)
            fail(
                    "gcc not found: the layout conformance test compiles a C program against infiniband/verbs.h. "
                            + "Install it (Debian/Ubuntu: apt-get install gcc libibverbs-dev) or run with -Djrdma.skipLayoutTest");
        if (!Files.exists(Path.of("/usr/include/infiniband/verbs.h")))
            fail("/usr/include/infiniband/verbs.h not found: "
                    + "install libibverbs-dev (Debian/Ubuntu: apt-get install libibverbs-dev; Fedora: dnf install rdma-core-devel) "
                    + "or run with -Djrdma.skipLayoutTest");

        StringBuilder c = new StringBuilder(
                        "#include <stddef.h>\n#include <stdio.h>\n#include <poll.h>\n#include <infiniband/verbs.h>\n")
                .append(
                        "#define F(S, M) printf(\"%s %s %zu %zu\\n\", #S, #M, offsetof(struct S, M), sizeof(((struct S *)0)->M));\n")
                .append("#define Z(S) printf(\"%s - 0 %zu\\n\", #S, sizeof(struct S));\n")
                .append("int main(void) {\n");
        List<StructLayout> all = new ArrayList<>(Layouts.ALL);
        all.add(Layouts.POLLFD);
        Map<String, long[]> expected = new HashMap<>();
        for (StructLayout s : all) {
            String name = s.name().orElseThrow();
            c.append("  Z(").append(name).append(")\n");
            expected.put(name + " -", new long[] {0, s.byteSize()});
            for (Layouts.Field f : Layouts.fields(s)) {
                c.append("  F(").append(name).append(", ").append(f.path()).append(")\n");
                expected.put(name + " " + f.path(), new long[] {f.offset(), f.size()});
            }
        }
        // verbs_context's fixed tail: where query_device_ex and sz lie before the ibv_context
        c.append("  printf(\"verbs_context query_device_ex_back %zu 8\\n\", offsetof(struct verbs_context, context)"
                        + " - offsetof(struct verbs_context, query_device_ex));\n")
                .append("  printf(\"verbs_context sz_back %zu 8\\n\", offsetof(struct verbs_context, context)"
                        + " - offsetof(struct verbs_context, sz));\n");
        expected.put("verbs_context query_device_ex_back", new long[] {Layouts.VCTX_QUERY_DEVICE_EX_BACK, 8});
        expected.put("verbs_context sz_back", new long[] {Layouts.VCTX_SZ_BACK, 8});
        c.append("  return 0;\n}\n");

        Path dir = Files.createTempDirectory("jrdma-layout");
        Path src = dir.resolve("layout.c"), exe = dir.resolve("layout");
        Files.writeString(src, c);
        String out = run(List.of(gcc.toString(), "-std=gnu11", "-o", exe.toString(), src.toString()));
        String printed = run(List.of(exe.toString()));
        int checked = 0;
        List<String> mismatches = new ArrayList<>();
        for (String line : printed.split("\n")) {
            String[] p = line.trim().split(" ");
            if (p.length != 4) continue;
            long[] want = expected.remove(p[0] + " " + p[1]);
            if (want == null) continue;
            long off = Long.parseLong(p[2]), size = Long.parseLong(p[3]);
            if (off != want[0] || size != want[1]) {
                mismatches.add("struct " + p[0] + (p[1].equals("-") ? "" : "." + p[1]) + ": C offset " + off + " size "
                        + size + ", Java offset " + want[0] + " size " + want[1]);
            }
            checked++;
        }
        assertTrue(mismatches.isEmpty(), "layouts differ from infiniband/verbs.h:\n" + String.join("\n", mismatches));
        assertTrue(expected.isEmpty(), "not printed by the C program: " + expected.keySet() + "\n" + out);
        assertTrue(checked > 200, "only " + checked + " fields checked");
        System.out.println("layout conformance: " + checked + " sizes and offsets match infiniband/verbs.h");
    }

    private static Path which(String exe) {
        for (String d : System.getenv().getOrDefault("PATH", "/usr/bin:/bin").split(":")) {
            Path p = Path.of(d, exe);
            if (Files.isExecutable(p)) return p;
        }
        return null;
    }

    private static String run(List<String> cmd) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "timed out: " + cmd);
        assertEquals(0, p.exitValue(), String.join(" ", cmd) + " failed:\n" + out);
        return out;
    }
}
