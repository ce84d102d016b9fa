package dev.jrdma.soft.wire;

/** The IB path MTU values and their enumeration codes (IBV_MTU_256 = 1 .. IBV_MTU_4096 = 5). */
public enum Mtu {
    MTU_256(1, 256), MTU_512(2, 512), MTU_1024(3, 1024), MTU_2048(4, 2048), MTU_4096(5, 4096);

    private static final Mtu[] VALUES = values();
    private final int code;
    private final int bytes;

    Mtu(int code, int bytes) { this.code = code; this.bytes = bytes; }

    /** The verbs enumeration value (1..5). */
    public int code() { return code; }

    /** The payload size of a full packet, in bytes. */
    public int bytes() { return bytes; }

    public static Mtu ofCode(int code) {
        if (code < 1 || code > 5) throw new IllegalArgumentException("MTU code must be 1..5 (256..4096 bytes), got " + code);
        return VALUES[code - 1];
    }

    public static Mtu ofBytes(int bytes) {
        for (Mtu m : VALUES) if (m.bytes == bytes) return m;
        throw new IllegalArgumentException("MTU must be 256, 512, 1024, 2048 or 4096 bytes, got " + bytes);
    }

    /** The largest MTU not above {@code bytes} (at least 256). */
    public static Mtu floor(int bytes) {
        Mtu r = MTU_256;
        for (Mtu m : VALUES) if (m.bytes <= bytes) r = m;
        return r;
    }
}
