package org.skycmd;

import java.util.ArrayList;
import java.util.List;

/**
 * A piece of request content (a state, an instruction, a criterion), as the SDK's
 * {@code Content}: text, or a JSON value given as JSON text, or an array of contents.
 * Immutable.
 */
public final class Content {
    private final String json;

    private Content(String json) { this.json = json; }

    /** Text (a JSON string). */
    public static Content text(String text) {
        if (text == null) throw new IllegalArgumentException("content text is null");
        return new Content(Json.quote(text));
    }

    /**
     * A JSON value written as JSON text ({@code {"vy": 0}}, {@code [1, 2]}, {@code 3.5}), put
     * into the request verbatim; the library checks it when the request is decided.
     */
    public static Content json(String jsonValue) {
        if (jsonValue == null || jsonValue.isBlank()) throw new IllegalArgumentException("content JSON is empty");
        return new Content(jsonValue.strip());
    }

    /** An array of contents. */
    public static Content array(Content... items) {
        List<String> parts = new ArrayList<>();
        for (Content c : items) parts.add(c.json);
        return new Content("[" + String.join(", ", parts) + "]");
    }

    /** The JSON text of this content. */
    public String toJson() { return json; }

    @Override
    public String toString() { return json; }

    @Override
    public boolean equals(Object o) { return o instanceof Content c && c.json.equals(json); }

    @Override
    public int hashCode() { return json.hashCode(); }
}
