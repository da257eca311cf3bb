package org.skycmd;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * A question that assigns a score using an ordered rubric (the SDK's {@code Score}):
 * instructions and a non-empty list of descriptions, one per score from zero.
 *
 * <pre>{@code
 * Score margin = Score.of("How much room is left above and below the drone?")
 *         .levels("none", "tight", "comfortable");
 * }</pre>
 */
public final class Score implements Question {
    private final Content instructions;
    private final List<Content> criteria;

    private Score(Content instructions, List<Content> criteria) {
        this.instructions = instructions;
        this.criteria = criteria;
    }

    /** A score question with text instructions and no levels yet. */
    public static Score of(String instructions) { return of(Content.text(instructions)); }

    /** A score question with instructions (null: none) and no levels yet. */
    public static Score of(Content instructions) { return new Score(instructions, List.of()); }

    /** Adds levels (score 0, 1, ... in order of all calls) described by text. */
    public Score levels(String... descriptions) {
        List<Content> n = new ArrayList<>(criteria);
        for (String d : descriptions) n.add(Content.text(d));
        return new Score(instructions, Collections.unmodifiableList(n));
    }

    /** Adds one level described by any content. */
    public Score level(Content description) {
        if (description == null) throw new IllegalArgumentException("a score level needs a description");
        List<Content> n = new ArrayList<>(criteria);
        n.add(description);
        return new Score(instructions, Collections.unmodifiableList(n));
    }

    /** The number of levels. */
    public int levelCount() { return criteria.size(); }

    @Override
    public AnswerType type() { return AnswerType.SCORE; }

    @Override
    public String toJson() {
        if (criteria.isEmpty()) throw new IllegalArgumentException("Score question has no criteria; at least one score is required.");
        StringBuilder b = new StringBuilder("{\"type\": \"score\"");
        if (instructions != null) b.append(", \"instructions\": ").append(instructions.toJson());
        b.append(", \"criteria\": [");
        for (int i = 0; i < criteria.size(); i++) b.append(i > 0 ? ", " : "").append(criteria.get(i).toJson());
        return b.append("]}").toString();
    }
}
