package dev.jrdma.verbs;

/** Path MTU ({@code enum ibv_mtu}): the largest payload of one packet. */
public enum Mtu {
    MTU_256(1, 256), MTU_512(2, 512), MTU_1024(3, 1024), MTU_2048(4, 2048), MTU_4096(5, 4096);

    public final int code;
    public final int bytes;

    Mtu(int code, int bytes) {
        this.code = code;
        this.bytes = bytes;
    }

    public static Mtu of(int code) {
        for (Mtu m : values()) if (m.code == code) return m;
        throw new IllegalArgumentException("unknown MTU enum value " + code + " (1..5 = 256..4096 bytes)");
    }

    public static Mtu ofBytes(int bytes) {
        for (Mtu m : values()) if (m.bytes == bytes) return m;
        throw new IllegalArgumentException("no path MTU of " + bytes + " bytes: use 256, 512, 1024, 2048 or 4096");
    }

    /** The smaller of two MTUs: what both ends of a path can carry. */
    public Mtu min(Mtu other) {
        return code <= other.code ? this : other;
    }

    @Override
    public String toString() {
        return Integer.toString(bytes);
    }
}
