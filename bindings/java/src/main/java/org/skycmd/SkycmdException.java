package org.skycmd;

/** A failed libskycmd call: the status (pinned C value) and the library's message. */
public class SkycmdException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final Status status;
    private final int code;
    private final String libraryMessage;

    public SkycmdException(String operation, int code, String libraryMessage) {
        super("skycmd " + operation + ": " + Status.of(code).cName() + ": "
              + (libraryMessage == null || libraryMessage.isEmpty()
                     ? Status.of(code).description() : libraryMessage));
        this.status = Status.of(code);
        this.code = code;
        this.libraryMessage = libraryMessage == null ? "" : libraryMessage;
    }

    /** The status as an enum. */
    public Status status() { return status; }

    /** The raw C status value. */
    public int code() { return code; }

    /** The library's message alone (may be empty). */
    public String libraryMessage() { return libraryMessage; }

    static void check(String operation, int code, String message) {
        if (code != 0) throw new SkycmdException(operation, code, message);
    }
}
