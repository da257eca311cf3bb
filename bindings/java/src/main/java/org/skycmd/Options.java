package org.skycmd;

import java.util.ArrayList;
import java.util.List;
import org.skycmd.internal.SkyOptions;
import org.skycmd.internal.skycmd_option;

/**
 * Settings for a libskycmd call (skycmd_option keys). A call ignores options it does not use.
 * Immutable builder: each setter returns a new Options, so one instance can be shared.
 */
public final class Options {
    /** GGUF element types (ggml numbering). */
    public enum Type { F32(0), F16(1), Q8_0(8), BF16(30);
        final int code; Type(int c) { code = c; } }
    /** How an open model keeps its matrices (default F32, exact; BF16X3: AMX-BF16 tiles
     *  where usable, within 1e-4 of laya, else exactly F32). */
    public enum Weights { F32(0), Q8(1), Q8_PLAIN(2), BF16X3(3), Q8_ROW(4);
        final int code; Weights(int c) { code = c; } }
    /** int8 activation mode of sessions. */
    public enum Activations { Q8X2(0), Q8(1);
        final int code; Activations(int c) { code = c; } }
    /** Output layout of a random model. */
    public enum Layout { GGUF(0), LAYA(1);
        final int code; Layout(int c) { code = c; } }

    private record IntOpt(int key, long value, boolean session) {}
    private record StrOpt(int key, String value) {}

    private final List<IntOpt> ints;
    private final List<StrOpt> strs;

    public Options() { this(List.of(), List.of()); }

    private Options(List<IntOpt> ints, List<StrOpt> strs) { this.ints = ints; this.strs = strs; }

    private Options withInt(skycmd_option key, long v, boolean session) {
        List<IntOpt> n = new ArrayList<>(ints);
        n.add(new IntOpt(key.swigValue(), v, session));
        return new Options(List.copyOf(n), strs);
    }

    private Options withStr(skycmd_option key, String v) {
        List<StrOpt> n = new ArrayList<>(strs);
        n.add(new StrOpt(key.swigValue(), v));
        return new Options(ints, List.copyOf(n));
    }

    public Options weights(Weights w) { return withInt(skycmd_option.SKYCMD_OPT_WEIGHTS, w.code, false); }
    public Options maxTokens(int n) { return withInt(skycmd_option.SKYCMD_OPT_MAX_TOKENS, n, false); }
    public Options modelName(String s) { return withStr(skycmd_option.SKYCMD_OPT_MODEL_NAME, noNul("modelName", s)); }
    public Options threads(int n) { return withInt(skycmd_option.SKYCMD_OPT_THREADS, n, true); }
    public Options activations(Activations a) { return withInt(skycmd_option.SKYCMD_OPT_ACTIVATIONS, a.code, true); }
    public Options type(Type t) { return withInt(skycmd_option.SKYCMD_OPT_TYPE, t.code, false); }
    public Options headType(Type t) { return withInt(skycmd_option.SKYCMD_OPT_HEAD_TYPE, t.code, false); }
    public Options seed(long seed) { return withInt(skycmd_option.SKYCMD_OPT_SEED, seed, false); }
    public Options massive(int n) { return withInt(skycmd_option.SKYCMD_OPT_MASSIVE, n, false); }
    public Options layout(Layout l) { return withInt(skycmd_option.SKYCMD_OPT_LAYOUT, l.code, false); }
    public Options maxArray(int n) { return withInt(skycmd_option.SKYCMD_OPT_MAX_ARRAY, n, false); }
    public Options json(boolean on) { return withInt(skycmd_option.SKYCMD_OPT_JSON, on ? 1 : 0, false); }
    public Options name(String s) { return withStr(skycmd_option.SKYCMD_OPT_NAME, noNul("name", s)); }
    public Options pre(String s) { return withStr(skycmd_option.SKYCMD_OPT_PRE, noNul("pre", s)); }

    /**
     * s itself; an IllegalArgumentException naming the argument if s contains a NUL character
     * (U+0000): the C library takes NUL-terminated strings and would silently cut s there.
     */
    static String noNul(String argument, String s) {
        int at = s == null ? -1 : s.indexOf('\0');
        if (at >= 0) {
            throw new IllegalArgumentException(argument + " contains a NUL character (at index " + at
                + "): the C library would cut the string there");
        }
        return s;
    }

    /** A C options bag with the call options; the caller deletes it. */
    SkyOptions toNative(String operation) {
        SkyOptions o = new SkyOptions();
        try {
            for (IntOpt i : ints) {
                if (!i.session) SkycmdException.check(operation, o.setInt(i.key, i.value), "option " + i.key + " is out of range");
            }
            for (StrOpt s : strs) {
                SkycmdException.check(operation, o.setString(s.key, s.value), "option " + s.key + " is invalid");
            }
        } catch (RuntimeException e) {
            o.delete();
            throw e;
        }
        return o;
    }

    /** Session options as (key, value) pairs. */
    long[][] sessionOptions() {
        return ints.stream().filter(IntOpt::session).map(i -> new long[] {i.key, i.value}).toArray(long[][]::new);
    }
}
