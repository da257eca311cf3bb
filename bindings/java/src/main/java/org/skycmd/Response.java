package org.skycmd;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalDouble;
import org.skycmd.internal.SkyResponse;

/**
 * The answers of one decide call, copied out of the C response (which is freed at once).
 * {@link #answers()} is keyed by question id in request order, the same shape as in every
 * binding.
 */
public final class Response {
    private final Map<String, Answer> answers;
    private final long inputTokens;
    private final String model;
    private final String json;

    Response(SkyResponse b) {
        long n = b.answerCount();
        // Question ids are unique (the request's "questions" is a JSON object).
        Map<String, Answer> byId = new LinkedHashMap<>();
        for (long i = 0; i < n; i++) {
            AnswerType t = AnswerType.of(b.answerType(i));
            List<Probability> ps = new ArrayList<>();
            long m = b.optionCount(i);
            for (long j = 0; j < m; j++) ps.add(new Probability(b.optionKey(i, j), b.optionProbability(i, j)));
            // The C ABI reports a noul answer's absent confidence as NaN.
            double conf = b.answerConfidence(i);
            List<String> legend = new ArrayList<>();
            if (t == AnswerType.SCORE) for (long j = 0; j < m; j++) legend.add(b.optionLegend(i, j));
            String id = b.answerId(i);
            byId.put(id, new Answer(id, t, t == AnswerType.CHOICE ? b.answerChoice(i) : null,
                                b.answerValue(i), Double.isNaN(conf) ? OptionalDouble.empty() : OptionalDouble.of(conf),
                                Collections.unmodifiableList(ps), Collections.unmodifiableList(legend)));
        }
        this.answers = Collections.unmodifiableMap(byId);
        this.inputTokens = b.inputTokens();
        this.model = b.model();
        this.json = b.json();
    }

    /**
     * The answers keyed by question id, in request order (an unmodifiable
     * {@link LinkedHashMap}: iterating its keys, values or entries follows the request).
     */
    public Map<String, Answer> answers() { return answers; }

    /** The answer to question {@code id}, if any. */
    public Optional<Answer> answer(String id) { return Optional.ofNullable(answers.get(id)); }

    /** The choice answers by question id, in request order (the SDK's {@code choices}). */
    public Map<String, Answer> choices() { return byType(AnswerType.CHOICE); }

    /** The score answers by question id, in request order (the SDK's {@code scores}). */
    public Map<String, Answer> scores() { return byType(AnswerType.SCORE); }

    /** The noul answers by question id, in request order (the SDK's {@code nouls}). */
    public Map<String, Answer> nouls() { return byType(AnswerType.NOUL); }

    private Map<String, Answer> byType(AnswerType t) {
        Map<String, Answer> m = new LinkedHashMap<>();
        for (Answer a : answers.values()) if (a.type() == t) m.put(a.id(), a);
        return Collections.unmodifiableMap(m);
    }

    public long inputTokens() { return inputTokens; }

    /** The name of the model that answered (the wire's "model"). */
    public String model() { return model; }

    /** The library's wire JSON: {"model", "answers", "usage"}. */
    public String json() { return json; }
}
