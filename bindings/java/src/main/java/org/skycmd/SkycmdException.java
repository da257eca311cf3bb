package org.skycmd;

import java.nio.file.NoSuchFileException;
import org.skycmd.internal.SkyCall;

/**
 * A failed libskycmd call: the status and the library's message. {@link #code()} is the
 * status name ("SKYCMD_E_JSON"), as in every binding; {@link #statusNumber()} its pinned C
 * value (8) and {@link #status()} the enum. When the failure is a file that does not exist
 * (the library's errno ENOENT: a missing model file, the built-in model not installed), the
 * {@linkplain #getCause() cause} is a {@link NoSuchFileException} naming the file and
 * {@link #fileNotFound()} is true, so a caller can treat it as Java's not-found error while
 * {@code catch (SkycmdException e)} keeps catching every failure.
 */
public class SkycmdException extends RuntimeException {
    private static final long serialVersionUID = 2L;
    private final Status status;
    private final int number;
    private final int errno;
    private final String libraryMessage;

    public SkycmdException(String operation, int code, String libraryMessage) {
        this(operation, code, libraryMessage, 0, null);
    }

    /**
     * A failure with the operating system's {@code errno} behind it (0: none); {@code file}
     * is the file the call was given, named by the {@link NoSuchFileException} cause when
     * {@code notFound} (may be null).
     */
    SkycmdException(String operation, int code, String libraryMessage, int errno, String file, boolean notFound) {
        super("skycmd " + operation + ": " + Status.of(code).cName() + ": "
              + (libraryMessage == null || libraryMessage.isEmpty()
                     ? Status.of(code).description() : libraryMessage),
              notFound ? new NoSuchFileException(file, null, libraryMessage) : null);
        this.status = Status.of(code);
        this.number = code;
        this.errno = errno;
        this.libraryMessage = libraryMessage == null ? "" : libraryMessage;
    }

    private SkycmdException(String operation, int code, String libraryMessage, int errno, String file) {
        this(operation, code, libraryMessage, errno, file, false);
    }

    /** The failure recorded in a SkyCall (status, message, errno) about {@code file}. */
    static SkycmdException of(String operation, int code, SkyCall c, String file) {
        return new SkycmdException(operation, code, c.message(), c.osError(), file, c.fileNotFound());
    }

    /** The status as an enum. */
    public Status status() { return status; }

    /** The status name, e.g. "SKYCMD_E_IO" (skycmd_status_name; the same in every binding). */
    public String code() { return status == Status.UNKNOWN ? Status.of(number).cName() : status.cName(); }

    /** The pinned C value of the status, e.g. 4 for SKYCMD_E_IO. */
    public int statusNumber() { return number; }

    /** The operating system's error number behind the failure (ENOENT = 2 on Linux for a
     *  missing file), 0 when the failure had none. */
    public int errno() { return errno; }

    /** Whether the failure is a file that does not exist (the cause is then a
     *  {@link NoSuchFileException}). */
    public boolean fileNotFound() { return getCause() instanceof NoSuchFileException; }

    /** The library's message alone (may be empty). */
    public String libraryMessage() { return libraryMessage; }

    static void check(String operation, int code, String message) {
        if (code != 0) throw new SkycmdException(operation, code, message);
    }
}
