package org.skycmd;

/** The type of a question (skycmd_qtype). */
public enum AnswerType {
    CHOICE, SCORE, NOUL;

    static AnswerType of(int code) {
        switch (code) {
            case 0: return CHOICE;
            case 1: return SCORE;
            case 2: return NOUL;
            default: throw new SkycmdException("response", 13, "unknown answer type " + code);
        }
    }
}
