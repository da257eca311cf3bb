package org.skycmd;

import java.util.List;
import java.util.OptionalDouble;

/**
 * The answer to one question.
 *
 * @param id            the question id
 * @param type          choice, score or noul
 * @param choice        the chosen key of a choice question, null otherwise
 * @param value         expected level (score), P(true) (noul), chosen key's probability (choice)
 * @param confidence    confidence of a choice or score answer; empty for noul, which has none
 *                      (the wire omits it), so an absent value is never a NaN and two equal
 *                      answers are {@code equals}
 * @param probabilities the options in request order
 * @param legend        score answers: the request's description of each level, legend.get(j)
 *                      for level j (text, or compact JSON for a non-text description; the
 *                      wire's "legend"); empty for choice and noul answers
 */
public record Answer(String id, AnswerType type, String choice, double value, OptionalDouble confidence,
                     List<Probability> probabilities, List<String> legend) {
    /** The probability of option {@code key} ("thrust", "0", "true", ...), if it exists. */
    public OptionalDouble probability(String key) {
        for (Probability p : probabilities) if (p.key().equals(key)) return OptionalDouble.of(p.p());
        return OptionalDouble.empty();
    }
}
