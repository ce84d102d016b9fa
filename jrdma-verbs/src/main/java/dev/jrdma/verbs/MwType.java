package dev.jrdma.verbs;

/** Memory window types: type 1 is bound with the bind verb, type 2 with a BIND_MW work request. */
public enum MwType {
    TYPE_1(1), TYPE_2(2);

    public final int code;

    MwType(int code) {
        this.code = code;
    }

    public static MwType of(int code) {
        return code == 1 ? TYPE_1 : code == 2 ? TYPE_2 : null;
    }
}
