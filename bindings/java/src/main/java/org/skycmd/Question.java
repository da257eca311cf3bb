package org.skycmd;

/**
 * A question of a {@link Request}: {@link Choice}, {@link Score} or {@link Noul}, mirroring
 * the Jev SDK's ({@code typesafe-sdk}) question objects. Immutable.
 */
public sealed interface Question permits Choice, Score, Noul {
    /** The question's type on the wire. */
    AnswerType type();

    /** The question as a JSON object; throws IllegalArgumentException if it is incomplete. */
    String toJson();
}
