package org.skycmd;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * A question that selects between named alternatives (the SDK's {@code Choice}): instructions
 * and a non-empty, ordered map of labels to descriptions (a label may be undescribed).
 *
 * <pre>{@code
 * Choice action = Choice.of("Which input keeps the drone flying through the next gap?")
 *         .criterion("thrust", "fire the rotors for an upward impulse")
 *         .criterion("glide", "let gravity pull the drone down");
 * }</pre>
 */
public final class Choice implements Question {
    private record Criterion(String label, Content description) {}

    private final Content instructions;
    private final List<Criterion> criteria;

    private Choice(Content instructions, List<Criterion> criteria) {
        this.instructions = instructions;
        this.criteria = criteria;
    }

    /** A choice question with text instructions and no criteria yet. */
    public static Choice of(String instructions) { return of(Content.text(instructions)); }

    /** A choice question with instructions (null: none) and no criteria yet. */
    public static Choice of(Content instructions) { return new Choice(instructions, List.of()); }

    /** Adds a label with a text description. */
    public Choice criterion(String label, String description) {
        return criterion(label, description == null ? null : Content.text(description));
    }

    /** Adds a label with a description (null: undescribed). Labels must be distinct. */
    public Choice criterion(String label, Content description) {
        if (label == null || label.isEmpty()) throw new IllegalArgumentException("a choice label must be a non-empty string");
        for (Criterion c : criteria) {
            if (c.label.equals(label)) throw new IllegalArgumentException("choice label \"" + label + "\" is given twice");
        }
        List<Criterion> n = new ArrayList<>(criteria);
        n.add(new Criterion(label, description));
        return new Choice(instructions, Collections.unmodifiableList(n));
    }

    /** The labels in order. */
    public List<String> labels() { return criteria.stream().map(Criterion::label).toList(); }

    @Override
    public AnswerType type() { return AnswerType.CHOICE; }

    @Override
    public String toJson() {
        if (criteria.isEmpty()) throw new IllegalArgumentException("Choice question has no criteria; at least one choice is required.");
        StringBuilder b = new StringBuilder("{\"type\": \"choice\"");
        if (instructions != null) b.append(", \"instructions\": ").append(instructions.toJson());
        b.append(", \"criteria\": {");
        for (int i = 0; i < criteria.size(); i++) {
            Criterion c = criteria.get(i);
            if (i > 0) b.append(", ");
            b.append(Json.quote(c.label)).append(": ").append(c.description == null ? "null" : c.description.toJson());
        }
        return b.append("}}").toString();
    }
}
