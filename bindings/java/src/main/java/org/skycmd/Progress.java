package org.skycmd;

import org.skycmd.internal.SkyCall;
import org.skycmd.internal.SkyModel;
import org.skycmd.internal.SkyOptions;
import org.skycmd.internal.skycmd;

/**
 * Progress and cancellation of one {@link Skycmd#convert}, {@link Skycmd#quantize},
 * {@link Skycmd#randomModel} or model open ({@link Model#open(java.nio.file.Path, Options, Progress)},
 * {@link Model#openAsync(java.nio.file.Path, Options, Progress)}) call.
 *
 * <p>The {@link Listener} is called synchronously on the thread that made the call, once per
 * report of the library (done of total, in the call's units: bytes or tensors), while the
 * work is paused. {@link #cancel()} may be called from any thread (or from the listener),
 * before or during the call: the call stops at its next report and throws a
 * {@link SkycmdException} with {@link Status#CANCELLED}, leaving no output file. A listener
 * that throws stops the call the same way, and its exception is thrown instead. One Progress
 * serves one call at a time.
 */
public final class Progress {
    /** Receives progress reports on the calling thread. */
    @FunctionalInterface
    public interface Listener {
        void report(long done, long total);
    }

    private final Listener listener;
    private volatile boolean cancelled;
    private volatile long done, total, reports;
    // Guarded by this: the native box while a call runs.
    private SkyOptions box;

    /** Progress that is only read ({@link #done()}, {@link #total()}) or cancelled. */
    public Progress() { this(null); }

    /** Progress that reports to {@code listener}. */
    public Progress(Listener listener) { this.listener = listener; }

    /** Stops the call at its next progress report (any thread; stays raised). */
    public void cancel() {
        cancelled = true;
        synchronized (this) {
            if (box != null) box.cancel();
        }
    }

    public boolean isCancelled() { return cancelled; }

    /** The last reported amount of work done (0 before the first report). */
    public long done() { return done; }

    /** The last reported total (0 before the first report). */
    public long total() { return total; }

    /** How many reports the library made. */
    public long reports() { return reports; }

    /** What the native progress callback calls (through JNI) on the calling thread. */
    private final class Bridge {
        @SuppressWarnings("unused") // called from C
        boolean report(long d, long t) {
            done = d;
            total = t;
            reports++;
            if (listener != null && !cancelled) listener.report(d, t);
            return !cancelled;
        }
    }

    /** The file operations of skyFileCallWithListener. */
    static final int CONVERT = 0, QUANTIZE = 1, RANDOM = 2;

    /** Runs file operation {@code op} with this progress attached to {@code o}. */
    int run(SkyCall c, SkyOptions o, int op, String a, String b) {
        return attached(o, () -> skycmd.skyFileCallWithListener(c, op, a, b, o, new Bridge()));
    }

    /** Opens the model at {@code path} into {@code into} with this progress attached to {@code o}. */
    int runOpen(SkyCall c, SkyOptions o, String path, SkyModel into) {
        return attached(o, () -> skycmd.skyOpenModelWithListener(c, path, o, new Bridge(), into));
    }

    /** Runs {@code call} with this progress attached to {@code o} (one call at a time). */
    private int attached(SkyOptions o, java.util.function.IntSupplier call) {
        synchronized (this) {
            if (box != null) throw new IllegalStateException("this Progress is attached to a running call");
            box = o;
            if (cancelled) o.cancel();
        }
        try {
            return call.getAsInt();
        } finally {
            synchronized (this) {
                box = null;
            }
        }
    }
}
