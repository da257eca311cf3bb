package org.skycmd;

import java.lang.ref.Cleaner;
import java.nio.file.Path;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import org.skycmd.internal.SkyCall;
import org.skycmd.internal.SkyModel;
import org.skycmd.internal.SkyOptions;
import org.skycmd.internal.SkyResponse;
import org.skycmd.internal.SkySession;

/**
 * An open decision model. Thread-safe: the C model is immutable and shared; each
 * {@link #decide} borrows a session from a pool, so a C session is never used by two threads
 * at once. {@link #close} is idempotent and waits for running calls; a {@link Cleaner} frees
 * a model that was never closed (a safety net; use try-with-resources).
 */
public final class Model implements AutoCloseable {
    private static final Cleaner CLEANER = Cleaner.create();
    /** Native models currently open (for leak checks). */
    private static final AtomicInteger LIVE = new AtomicInteger();

    /** The number of native models open right now (closed or cleaned ones are not counted). */
    static int liveNativeModels() { return LIVE.get(); }

    /** Everything native, reachable from the Cleaner without the Model itself. */
    private static final class State implements Runnable {
        SkyModel box;
        final ConcurrentLinkedDeque<SkySession> idle = new ConcurrentLinkedDeque<>();

        @Override
        public void run() {
            SkySession s;
            while ((s = idle.poll()) != null) s.delete();
            if (box != null) {
                box.close();
                box.delete();
                box = null;
                LIVE.decrementAndGet();
            }
        }
    }

    private final State state = new State();
    private final Cleaner.Cleanable cleanable;
    private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
    private final long[][] sessionOptions;
    private final int maxIdle = Runtime.getRuntime().availableProcessors();

    private Model(SkyModel box, long[][] sessionOptions) {
        state.box = box;
        LIVE.incrementAndGet();
        this.sessionOptions = sessionOptions;
        this.cleanable = CLEANER.register(this, state);
    }

    /** Opens a GGUF decision model with default options. */
    public static Model open(Path gguf) { return open(gguf, null); }

    /** Opens a GGUF decision model (weights, maxTokens, modelName, threads, activations). */
    public static Model open(Path gguf, Options options) {
        Skycmd.ensureUsable();
        Options opts = options == null ? new Options() : options;
        SkyOptions o = opts.toNative("open");
        SkyCall c = new SkyCall();
        SkyModel box = new SkyModel();
        try {
            int st = c.openModel(gguf.toString(), o, box);
            if (st != 0) {
                String msg = c.message();
                box.delete();
                throw new SkycmdException("open", st, msg);
            }
            return new Model(box, opts.sessionOptions());
        } finally {
            c.delete();
            o.delete();
        }
    }

    private SkycmdException closed(String op) {
        return new SkycmdException(op, Status.MISUSE.code(), "model is closed");
    }

    /** The model name reported in responses. */
    public String name() {
        lock.readLock().lock();
        try {
            if (state.box == null) throw closed("name");
            return state.box.name();
        } finally {
            lock.readLock().unlock();
        }
    }

    /** A hyper-parameter by GGUF-style name ("embedding_length", "decision.max_tokens", ...). */
    public long intParameter(String name) {
        lock.readLock().lock();
        try {
            if (state.box == null) throw closed("model int");
            long v = state.box.getInt(name);
            if (v < 0) throw new SkycmdException("model int", Status.NOT_FOUND.code(), "no hyper-parameter " + name);
            return v;
        } finally {
            lock.readLock().unlock();
        }
    }

    public boolean isClosed() {
        lock.readLock().lock();
        try {
            return state.box == null;
        } finally {
            lock.readLock().unlock();
        }
    }

    private SkySession takeSession() {
        SkySession s = state.idle.poll();
        if (s != null) return s;
        s = new SkySession();
        int st = s.open(state.box);
        if (st != 0) {
            String msg = s.message();
            s.delete();
            throw new SkycmdException("session", st, msg);
        }
        for (long[] kv : sessionOptions) {
            st = s.setInt((int) kv[0], kv[1]);
            if (st != 0) {
                String msg = s.message();
                s.delete();
                throw new SkycmdException("session option", st, msg);
            }
        }
        return s;
    }

    private void giveSession(SkySession s) {
        if (state.idle.size() < maxIdle) state.idle.push(s);
        else s.delete();
    }

    /**
     * Answers every question of a /v1/systemone request (JSON text). Request errors throw
     * with {@link Status#JSON}, {@link Status#REQUEST} or {@link Status#TOO_LARGE}.
     */
    public Response decide(String requestJson) {
        lock.readLock().lock();
        try {
            if (state.box == null) throw closed("decide");
            SkySession s = takeSession();
            SkyResponse r = new SkyResponse();
            try {
                int st = s.decide(requestJson, r);
                if (st != 0) throw new SkycmdException("decide", st, s.message());
                return new Response(r);
            } finally {
                r.delete();
                giveSession(s);
            }
        } finally {
            lock.readLock().unlock();
        }
    }

    /** Frees the model; waits for running decide calls; closing twice does nothing. */
    @Override
    public void close() {
        lock.writeLock().lock();
        try {
            cleanable.clean();
        } finally {
            lock.writeLock().unlock();
        }
    }
}
