package org.skycmd;

import java.nio.file.Path;
import org.skycmd.internal.SkyCall;
import org.skycmd.internal.SkyOptions;
import org.skycmd.internal.skycmd;
import org.skycmd.internal.skycmdConstants;

/**
 * Entry points of libskycmd that need no model: versions and the file tools. When this
 * class loads, it checks that the running library is at least the header version the
 * binding was built against; if not, every call throws a {@link SkycmdException} with
 * {@link Status#VERSION}.
 */
public final class Skycmd {
    /** SKYCMD_VERSION_NUMBER of the header this binding was compiled with. */
    public static final long HEADER_VERSION_NUMBER = skycmdConstants.SKYCMD_HEADER_VERSION_NUMBER;

    static volatile SkycmdException loadError = versionError(HEADER_VERSION_NUMBER);

    private Skycmd() {}

    private static SkycmdException versionError(long headerVersionNumber) {
        SkyCall c = new SkyCall();
        try {
            int st = c.checkVersion(headerVersionNumber);
            return st == 0 ? null : new SkycmdException("check version", st, c.message());
        } finally {
            c.delete();
        }
    }

    /** Throws {@link Status#VERSION} unless the running library is at least
     *  {@code headerVersionNumber} (MAJOR*10000 + MINOR*100 + PATCH) with the same major. */
    public static void checkVersion(long headerVersionNumber) {
        SkycmdException e = versionError(headerVersionNumber);
        if (e != null) throw e;
    }

    static void ensureUsable() {
        SkycmdException e = loadError;
        if (e != null) throw new SkycmdException("load", e.statusNumber(), e.libraryMessage());
    }

    public static String version() { return skycmd.skycmd_version_string(); }
    public static long versionNumber() { return skycmd.skycmd_version_number(); }
    public static String buildId() { return skycmd.skycmd_build_id(); }
    public static String cpuFeatures() { return skycmd.skycmd_cpu_features(); }

    @FunctionalInterface
    interface CallBody { int run(SkyCall c, SkyOptions o); }

    static SkyCall call(String operation, Options options, CallBody body) {
        return call(operation, null, options, body);
    }

    /** {@code file}: what a {@link java.nio.file.NoSuchFileException} cause names (may be null). */
    static SkyCall call(String operation, String file, Options options, CallBody body) {
        ensureUsable();
        SkyOptions o = (options == null ? new Options() : options).toNative(operation);
        SkyCall c = new SkyCall();
        boolean ok = false;
        try {
            int st = body.run(c, o);
            if (st != 0) throw SkycmdException.of(operation, st, c, file);
            ok = true;
            return c;
        } finally {
            if (!ok) c.delete();
            o.delete();
        }
    }

    /** A file operation ({@link Progress#CONVERT}, ...) with a Progress, or without one. */
    static void fileCall(String operation, Options options, Progress progress, int op, String a, String b) {
        if (progress == null) {
            call(operation, options, (c, o) -> op == Progress.CONVERT ? c.convert(a, b, o)
                    : op == Progress.QUANTIZE ? c.quantize(a, b, o) : c.randomModel(a, b, o)).delete();
        } else {
            call(operation, options, (c, o) -> progress.run(c, o, op, a, b)).delete();
        }
    }

    /** Converts a Laya checkpoint directory to one GGUF file (type, headType, name, pre). */
    public static void convert(Path layaDir, Path out, Options options) {
        convert(layaDir, out, options, null);
    }

    /**
     * {@link #convert(Path, Path, Options)} with progress reports and cancellation
     * ({@link Status#CANCELLED}, no output left); {@code progress} may be null.
     */
    public static void convert(Path layaDir, Path out, Options options, Progress progress) {
        fileCall("convert", options, progress, Progress.CONVERT, layaDir.toString(), out.toString());
    }

    /** Writes a deterministic random model of a preset (seed, massive, layout). */
    public static void randomModel(String preset, Path out, Options options) {
        randomModel(preset, out, options, null);
    }

    /** {@link #randomModel(String, Path, Options)} with progress and cancellation (may be null). */
    public static void randomModel(String preset, Path out, Options options, Progress progress) {
        fileCall("random model", options, progress, Progress.RANDOM, preset, out.toString());
    }

    /** Re-types the tensors of a GGUF file (type, headType). */
    public static void quantize(Path in, Path out, Options options) {
        quantize(in, out, options, null);
    }

    /**
     * {@link #quantize(Path, Path, Options)} with progress reports and cancellation
     * ({@link Status#CANCELLED}, no output left); {@code progress} may be null.
     */
    public static void quantize(Path in, Path out, Options options, Progress progress) {
        fileCall("quantize", options, progress, Progress.QUANTIZE, in.toString(), out.toString());
    }

    /**
     * Where the library finds the built-in model s1-pico-flappy.gguf
     * (skycmd_default_model_path): {@code $SKYCMD_DEFAULT_MODEL}, else beside the library,
     * else the library's configured data directory. This binding links the library into its
     * JNI library, extracted to a temporary directory, so "beside the library" finds nothing:
     * set {@code SKYCMD_DEFAULT_MODEL}, or install the model under the prefix the library was
     * configured with (a Debian package: /usr/share/skycmd/models). When there is none it
     * throws {@link Status#NOT_FOUND} with a {@link java.nio.file.NoSuchFileException} cause
     * and a message naming the places looked in.
     */
    public static Path defaultModelPath() {
        SkyCall c = call("default model", "s1-pico-flappy.gguf", null, (cc, o) -> cc.defaultModelPath());
        try {
            return Path.of(c.takeOutput());
        } finally {
            c.delete();
        }
    }

    /** The printed header, metadata and tensor table of a GGUF file (maxArray, json). */
    public static String inspect(Path gguf, Options options) {
        SkyCall c = call("inspect", gguf.toString(), options, (cc, o) -> cc.inspect(gguf.toString(), o));
        try {
            return c.takeOutput();
        } finally {
            c.delete();
        }
    }
}
