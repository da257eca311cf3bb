package org.skycmd;

/**
 * A yes/no question (the SDK's {@code Noul}): instructions and optional descriptions of the
 * yes ({@code true}) and no ({@code false}) outcomes. The SDK needs the instructions or a
 * described outcome; libskycmd also needs the instructions (a request without them fails
 * with {@link Status#REQUEST}).
 *
 * <pre>{@code
 * Noul danger = Noul.of("Will the drone crash within the next half second if it keeps gliding?");
 * }</pre>
 */
public final class Noul implements Question {
    private final Content instructions;
    private final Content whenTrue, whenFalse;

    private Noul(Content instructions, Content whenTrue, Content whenFalse) {
        this.instructions = instructions;
        this.whenTrue = whenTrue;
        this.whenFalse = whenFalse;
    }

    /** A yes/no question with text instructions. */
    public static Noul of(String instructions) { return of(Content.text(instructions)); }

    /** A yes/no question with instructions (null: none, then an outcome must be described). */
    public static Noul of(Content instructions) { return new Noul(instructions, null, null); }

    /** Describes the yes outcome (criteria.true). */
    public Noul whenTrue(String description) { return whenTrue(Content.text(description)); }

    public Noul whenTrue(Content description) { return new Noul(instructions, description, whenFalse); }

    /** Describes the no outcome (criteria.false). */
    public Noul whenFalse(String description) { return whenFalse(Content.text(description)); }

    public Noul whenFalse(Content description) { return new Noul(instructions, whenTrue, description); }

    @Override
    public AnswerType type() { return AnswerType.NOUL; }

    @Override
    public String toJson() {
        if (instructions == null && whenTrue == null && whenFalse == null)
            throw new IllegalArgumentException("Noul question has neither instructions nor criteria; at least one is required.");
        StringBuilder b = new StringBuilder("{\"type\": \"noul\"");
        if (instructions != null) b.append(", \"instructions\": ").append(instructions.toJson());
        if (whenTrue != null || whenFalse != null) {
            b.append(", \"criteria\": {");
            if (whenTrue != null) b.append("\"true\": ").append(whenTrue.toJson());
            if (whenFalse != null) b.append(whenTrue != null ? ", " : "").append("\"false\": ").append(whenFalse.toJson());
            b.append('}');
        }
        return b.append('}').toString();
    }
}
