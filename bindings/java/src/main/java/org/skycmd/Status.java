package org.skycmd;

import org.skycmd.internal.skycmd;

/** libskycmd status codes; the numbers are pinned by skycmd.h and never change. */
public enum Status {
    OK(0), INVALID_ARGUMENT(1), MISUSE(2), NOMEM(3), IO(4), FORMAT(5), UNSUPPORTED(6),
    BUSY(7), JSON(8), REQUEST(9), TOO_LARGE(10), VERSION(11), NOT_FOUND(12), INTERNAL(13),
    CANCELLED(14), UNKNOWN(-1);

    private final int code;

    Status(int code) { this.code = code; }

    /** The C value. */
    public int code() { return code; }

    /** The C name, e.g. "SKYCMD_E_IO" (from the library). */
    public String cName() { return skycmd.skycmd_status_name(code); }

    /** The library's English description of the status. */
    public String description() { return skycmd.skycmd_strerror(code); }

    /** The Status of a C value (UNKNOWN for values this binding does not know). */
    public static Status of(int code) {
        for (Status s : values()) if (s.code == code) return s;
        return UNKNOWN;
    }
}
