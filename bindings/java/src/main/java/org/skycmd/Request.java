package org.skycmd;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * A /v1/systemone request built from typed questions, so no JSON is written by hand: the
 * state and the questions by id, in order (the SDK's {@code system_one(state=..., questions=
 * {...})}). Immutable; {@link Model#decide(Request)} answers it.
 *
 * <pre>{@code
 * Request req = Request.of("vy 0 dx 36 up 9 dn 7 nxt 10 alt 32")
 *         .question("action", Choice.of("Which input keeps the drone flying through the next gap?")
 *                 .criterion("thrust", "fire the rotors for an upward impulse")
 *                 .criterion("glide", "let gravity pull the drone down"))
 *         .question("danger", Noul.of("Will the drone crash within the next half second if it keeps gliding?"))
 *         .question("margin", Score.of("How much room is left above and below the drone?")
 *                 .levels("none", "tight", "comfortable"));
 * Response r = model.decide(req);
 * }</pre>
 */
public final class Request {
    private record Entry(String id, Question question) {}

    private final Content state;
    private final String model;
    private final List<Entry> questions;

    private Request(Content state, String model, List<Entry> questions) {
        this.state = state;
        this.model = model;
        this.questions = questions;
    }

    /** A request about a text state, with no questions yet. */
    public static Request of(String state) { return of(Content.text(state)); }

    /** A request about any state content (text, JSON, an array). */
    public static Request of(Content state) {
        if (state == null) throw new IllegalArgumentException("a request needs a state");
        return new Request(state, null, List.of());
    }

    /** Adds a question; ids must be distinct. */
    public Request question(String id, Question question) {
        if (id == null || id.isEmpty()) throw new IllegalArgumentException("a question id must be a non-empty string");
        if (question == null) throw new IllegalArgumentException("question \"" + id + "\" is null");
        for (Entry e : questions) {
            if (e.id.equals(id)) throw new IllegalArgumentException("question \"" + id + "\" is given twice");
        }
        List<Entry> n = new ArrayList<>(questions);
        n.add(new Entry(id, question));
        return new Request(state, model, Collections.unmodifiableList(n));
    }

    /** The request's "model" field (the name a server routes by; null: none). */
    public Request model(String name) { return new Request(state, name, questions); }

    /** The question ids in order. */
    public List<String> questionIds() { return questions.stream().map(Entry::id).toList(); }

    /** The request as JSON text; throws IllegalArgumentException if it has no question or one is incomplete. */
    public String toJson() {
        if (questions.isEmpty()) throw new IllegalArgumentException("At least one question is required.");
        StringBuilder b = new StringBuilder("{");
        if (model != null) b.append("\"model\": ").append(Json.quote(model)).append(", ");
        b.append("\"state\": ").append(state.toJson()).append(", \"questions\": {");
        for (int i = 0; i < questions.size(); i++) {
            Entry e = questions.get(i);
            b.append(i > 0 ? ", " : "").append(Json.quote(e.id)).append(": ").append(e.question.toJson());
        }
        return b.append("}}").toString();
    }

    @Override
    public String toString() { return toJson(); }
}
