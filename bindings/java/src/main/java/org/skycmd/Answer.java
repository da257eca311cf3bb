package org.skycmd;

import java.util.List;

/**
 * The answer to one question.
 *
 * @param id            the question id
 * @param type          choice, score or noul
 * @param choice        the chosen key of a choice question, null otherwise
 * @param value         expected level (score), P(true) (noul), chosen key's probability (choice)
 * @param confidence    confidence of choice/score; NaN for noul (the wire has none)
 * @param probabilities the options in request order
 */
public record Answer(String id, AnswerType type, String choice, double value, double confidence,
                     List<Probability> probabilities) {}
