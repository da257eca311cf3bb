package org.skycmd;

import java.lang.ref.Cleaner;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Function;
import org.skycmd.internal.SkyBatch;
import org.skycmd.internal.SkyCall;
import org.skycmd.internal.SkyModel;
import org.skycmd.internal.SkyOptions;
import org.skycmd.internal.SkyResponse;
import org.skycmd.internal.SkySession;
import org.skycmd.internal.SkyTokenizer;
import org.skycmd.internal.skycmd;

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
        /** The model's tokenizer, borrowed on first use (guarded by this State). */
        SkyTokenizer tokenizer;

        @Override
        public void run() {
            SkySession s;
            while ((s = idle.poll()) != null) s.delete();
            synchronized (this) {
                // A borrowed tokenizer keeps the C model from closing (BUSY): return it first.
                if (tokenizer != null) {
                    tokenizer.close();
                    tokenizer.delete();
                    tokenizer = null;
                }
            }
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

    /**
     * Opens the built-in model s1-pico-flappy.gguf ({@link Skycmd#defaultModelPath()}) with
     * default options.
     */
    public static Model openDefault() { return openDefault(null); }

    /** {@link #openDefault()} with the options of {@link #open(Path, Options)}. */
    public static Model openDefault(Options options) {
        return open(Skycmd.defaultModelPath(), options);
    }

    /**
     * Opens a GGUF decision model (weights, maxTokens, modelName, threads, activations). A
     * file that does not exist throws {@link Status#IO} with a
     * {@link java.nio.file.NoSuchFileException} cause ({@link SkycmdException#fileNotFound()}).
     */
    public static Model open(Path gguf, Options options) {
        Skycmd.ensureUsable();
        Options opts = options == null ? new Options() : options;
        SkyOptions o = opts.toNative("open");
        SkyCall c = new SkyCall();
        SkyModel box = new SkyModel();
        try {
            int st = c.openModel(gguf.toString(), o, box);
            if (st != 0) {
                box.delete();
                throw SkycmdException.of("open", st, c, gguf.toString());
            }
            return new Model(box, opts.sessionOptions());
        } finally {
            c.delete();
            o.delete();
        }
    }

    /**
     * Opens a GGUF decision model from its bytes (a resource, a download) without a file.
     * The bytes are copied; the array may be reused at once.
     */
    public static Model openBuffer(byte[] gguf) { return openBuffer(gguf, null); }

    /** {@link #openBuffer(byte[])} with options (weights, maxTokens, modelName, threads, activations). */
    public static Model openBuffer(byte[] gguf, Options options) {
        Skycmd.ensureUsable();
        if (gguf == null) throw new SkycmdException("open buffer", Status.INVALID_ARGUMENT.code(), "the model bytes are null");
        Options opts = options == null ? new Options() : options;
        SkyOptions o = opts.toNative("open buffer");
        SkyCall c = new SkyCall();
        SkyModel box = new SkyModel();
        try {
            int st = skycmd.skyOpenModelBuffer(c, gguf, o, box);
            if (st != 0) {
                String msg = c.message();
                box.delete();
                throw new SkycmdException("open buffer", st, msg);
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

    /** Answers a request built with {@link Request}. */
    public Response decide(Request request) {
        return decide(request.toJson());
    }

    /**
     * Answers several requests together (skycmd_decide_batch): one pass over the model for
     * all of them, the responses in request order. All or nothing: a request that does not
     * parse or validate fails the call, and the message names it ("request 2: ...").
     */
    public List<Response> decideBatch(List<String> requestJsons) {
        lock.readLock().lock();
        try {
            if (state.box == null) throw closed("decide batch");
            SkyBatch batch = new SkyBatch();
            SkySession s = null;
            try {
                for (String json : requestJsons) {
                    int st = batch.add(json);
                    if (st != 0) throw new SkycmdException("decide batch", st, batch.message());
                }
                s = takeSession();
                int st = s.decideBatch(batch);
                if (st != 0) throw new SkycmdException("decide batch", st, s.message());
                List<Response> out = new ArrayList<>(requestJsons.size());
                for (int i = 0; i < requestJsons.size(); i++) {
                    SkyResponse r = new SkyResponse();
                    try {
                        st = batch.takeResponse(i, r);
                        if (st != 0) throw new SkycmdException("decide batch", st, batch.message());
                        out.add(new Response(r));
                    } finally {
                        r.delete();
                    }
                }
                return Collections.unmodifiableList(out);
            } finally {
                batch.delete();
                if (s != null) giveSession(s);
            }
        } finally {
            lock.readLock().unlock();
        }
    }

    /** {@link #decideBatch(List)} for requests built with {@link Request}. */
    public List<Response> decideBatchRequests(List<Request> requests) {
        List<String> jsons = new ArrayList<>(requests.size());
        for (Request r : requests) jsons.add(r.toJson());
        return decideBatch(jsons);
    }

    /**
     * The model's tokenizer (the one its requests are encoded with). It belongs to the model:
     * usable until the model is closed, and its {@code close()} does nothing.
     */
    public Tokenizer tokenizer() {
        lock.readLock().lock();
        try {
            if (state.box == null) throw closed("tokenizer");
            return new Tokenizer(this);
        } finally {
            lock.readLock().unlock();
        }
    }

    /** Runs {@code f} on the model's tokenizer box (borrowed on first use), one call at a time. */
    <T> T withTokenizer(String op, Function<SkyTokenizer, T> f) {
        lock.readLock().lock();
        try {
            if (state.box == null) throw closed(op);
            synchronized (state) {
                if (state.tokenizer == null) {
                    SkyTokenizer t = new SkyTokenizer();
                    int st = t.fromModel(state.box);
                    if (st != 0) {
                        String msg = t.message();
                        t.delete();
                        throw new SkycmdException(op, st, msg);
                    }
                    state.tokenizer = t;
                }
                return f.apply(state.tokenizer);
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
