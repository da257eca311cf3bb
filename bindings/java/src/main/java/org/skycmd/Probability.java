package org.skycmd;

/** One option of an answer: key ("0".."n-1" for score, "false"/"true" for noul) and p. */
public record Probability(String key, double p) {}
