package org.skycmd;

import java.util.Optional;

/**
 * One item of a streaming batch ({@link Model#decideEach}, {@link Model#decideEachRequests}):
 * the response to its request, or the {@link SkycmdException} that request alone failed with
 * (its status name and message, as {@link Model#decide} would throw them). A failed item does
 * not stop the stream.
 */
public final class Result {
    private final Response response;
    private final SkycmdException error;

    private Result(Response response, SkycmdException error) {
        this.response = response;
        this.error = error;
    }

    static Result of(Response response) { return new Result(response, null); }

    static Result failed(SkycmdException error) { return new Result(null, error); }

    /** Whether the request was answered. */
    public boolean isOk() { return error == null; }

    /** The response; throws this item's {@link SkycmdException} if it failed. */
    public Response response() {
        if (error != null) throw error;
        return response;
    }

    /** Why the request has no response; empty when it was answered. */
    public Optional<SkycmdException> error() { return Optional.ofNullable(error); }

    @Override
    public String toString() { return error == null ? "Result[ok]" : "Result[" + error.getMessage() + "]"; }
}
