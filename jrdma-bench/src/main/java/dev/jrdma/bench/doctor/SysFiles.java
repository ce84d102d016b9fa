package dev.jrdma.bench.doctor;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Reading sysfs and procfs as the doctor does: a file, link or directory that is missing or unreadable is an absent
 * value (null, -1, empty), never an exception, so one odd entry does not stop the checks.
 */
final class SysFiles {
    private SysFiles() {}

    /** {@return the text of {@code f} (its first MiB), or null when it is not a readable regular file} */
    static String read(Path f) {
        try {
            if (!Files.isRegularFile(f)) return null;
            byte[] b = Files.readAllBytes(f);
            return new String(b, 0, Math.min(b.length, 1 << 20), StandardCharsets.UTF_8);
        } catch (IOException | SecurityException e) {
            return null;
        }
    }

    /** {@return {@code s} without surrounding white space, or null for null} */
    static String trim(String s) {
        return s == null ? null : s.trim();
    }

    /** {@return {@code s} as a hexadecimal number (with or without 0x), or -1 when it is none} */
    static int hex(String s) {
        if (s == null) return -1;
        String t = s.trim().toLowerCase(Locale.ROOT);
        if (t.startsWith("0x")) t = t.substring(2);
        try {
            return Integer.parseUnsignedInt(t, 16);
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    /** {@return {@code f} with its links resolved, or its normalised absolute path when it cannot be} */
    static Path real(Path f) {
        try {
            return f.toRealPath();
        } catch (IOException | SecurityException e) {
            return f.toAbsolutePath().normalize();
        }
    }

    /** {@return the last name of what {@code link} points at (e.g. a device's driver), or null} */
    static String linkName(Path link) {
        try {
            if (Files.isSymbolicLink(link))
                return Files.readSymbolicLink(link).getFileName().toString();
            if (Files.isDirectory(link)) return link.toRealPath().getFileName().toString();
        } catch (IOException | SecurityException ignored) {
        }
        return null;
    }

    /** {@return the entries of {@code dir}, sorted; empty when it is not a readable directory} */
    static List<Path> list(Path dir) {
        List<Path> out = new ArrayList<>();
        if (!Files.isDirectory(dir)) return out;
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir)) {
            for (Path f : ds) out.add(f);
        } catch (IOException | SecurityException ignored) {
        }
        out.sort(null);
        return out;
    }

    /** {@return the names of the entries of {@code dir}, sorted} */
    static List<String> names(Path dir) {
        return list(dir).stream().map(f -> f.getFileName().toString()).toList();
    }
}
