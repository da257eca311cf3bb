package org.skycmd;

import java.lang.ref.Cleaner;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Objects;
import java.util.Spliterator;
import java.util.Spliterators;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Function;
import java.util.stream.Stream;
import java.util.stream.StreamSupport;
import org.skycmd.internal.SkyBatch;
import org.skycmd.internal.SkyCall;
import org.skycmd.internal.SkyEach;
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
    public static Model open(Path gguf, Options options) { return open(gguf, options, null); }

    /**
     * {@link #open(Path, Options)} with progress and cancellation: {@code progress} (may be
     * null) hears the load's reports on this thread, and its {@link Progress#cancel()} (from
     * any thread, or returning from its listener after cancel) stops the load with
     * {@link Status#CANCELLED}.
     */
    public static Model open(Path gguf, Options options, Progress progress) {
        Skycmd.ensureUsable();
        Objects.requireNonNull(gguf, "gguf");
        Options opts = options == null ? new Options() : options;
        SkyOptions o = opts.toNative("open");
        SkyCall c = new SkyCall();
        SkyModel box = new SkyModel();
        boolean opened = false;
        try {
            int st = progress == null ? c.openModel(gguf.toString(), o, box)
                                      : progress.runOpen(c, o, gguf.toString(), box);
            if (st != 0) throw SkycmdException.of("open", st, c, gguf.toString());
            Model m = new Model(box, opts.sessionOptions());
            opened = true;
            return m;
        } finally {
            // A failed or cancelled open (or a listener that threw) leaves the box empty.
            if (!opened) box.delete();
            c.delete();
            o.delete();
        }
    }

    /** {@link #openAsync(Path, Options, Progress, Executor)} with default options. */
    public static CompletableFuture<Model> openAsync(Path gguf) { return openAsync(gguf, null, null, null); }

    /** {@link #openAsync(Path, Options, Progress, Executor)} without progress. */
    public static CompletableFuture<Model> openAsync(Path gguf, Options options) {
        return openAsync(gguf, options, null, null);
    }

    /** {@link #openAsync(Path, Options, Progress, Executor)} on a thread of its own. */
    public static CompletableFuture<Model> openAsync(Path gguf, Options options, Progress progress) {
        return openAsync(gguf, options, progress, null);
    }

    /**
     * Opens a model off the calling thread ({@link #open(Path, Options, Progress)} on
     * {@code executor}, or on a new daemon thread "skycmd-open" when it is null): a large model
     * or int8 weights take seconds to minutes to load. The future completes with the model,
     * or exceptionally with the {@link SkycmdException} open would throw.
     *
     * <p>Cancelling the future ({@code cancel(true)} or {@code cancel(false)}) cancels the
     * load: the C load stops at its next progress report ({@link Status#CANCELLED}) and no
     * model stays open (one that finished loading just as the future was cancelled is
     * closed). {@code progress} (may be null) hears the reports on the loading thread and is
     * cancelled with the future.
     */
    public static CompletableFuture<Model> openAsync(Path gguf, Options options, Progress progress, Executor executor) {
        Objects.requireNonNull(gguf, "gguf");
        Progress p = progress != null ? progress : new Progress();
        CompletableFuture<Model> future = new CompletableFuture<>();
        // CompletableFuture.cancel interrupts nothing: the cancellation reaches the load
        // through the progress callback's flag.
        future.whenComplete((m, e) -> {
            if (future.isCancelled()) p.cancel();
        });
        Runnable load = () -> {
            if (future.isDone()) return; // cancelled before it started
            try {
                Model m = open(gguf, options, p);
                if (!future.complete(m)) m.close(); // cancelled meanwhile: nobody can take it
            } catch (Throwable t) {
                future.completeExceptionally(t);
            }
        };
        try {
            if (executor != null) {
                executor.execute(load);
            } else {
                Thread t = new Thread(load, "skycmd-open");
                t.setDaemon(true);
                t.start();
            }
        } catch (RuntimeException e) { // a RejectedExecutionException
            future.completeExceptionally(e);
        }
        return future;
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
            java.util.Objects.requireNonNull(name, "name");
            if (state.box == null) throw closed("model int");
            long v = state.box.getInt(Options.noNul("name", name));
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
            Options.noNul("requestJson", requestJson);
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

    /** How many requests decideEach answers with one skycmd_decide_each call. */
    static final int EACH_GROUP = 32;

    /**
     * A streaming batch: answers the requests (JSON text) as the returned stream is consumed,
     * in groups of 32 that each share the model's batches (one
     * skycmd_decide_each call per group), and gives one {@link Result} per request in input
     * order: its {@link Response}, or the {@link SkycmdException} that request alone failed
     * with (bad JSON, an invalid request, a null element; {@code Status.JSON}, {@code REQUEST},
     * {@code TOO_LARGE}, {@code INVALID_ARGUMENT}). A failed request never stops the stream.
     * The source is read lazily, one group ahead at most, so it may be endless (a file's
     * lines, a queue; {@code stream::iterator} for a {@link Stream}). A failure of a whole
     * group (the model closed meanwhile, out of memory) is each of its items' error. The
     * stream is sequential; the model is held only while a group is answered, so
     * {@link #close} does not wait for a stream that is not being read.
     */
    public Stream<Result> decideEach(Iterable<String> requestJsons) {
        return each(requestJsons.iterator(), json -> json);
    }

    /**
     * {@link #decideEach(Iterable)} for requests built with {@link Request}; one that
     * {@link Request#toJson()} refuses (no question) is its item's {@link Status#REQUEST}
     * error.
     */
    public Stream<Result> decideEachRequests(Iterable<Request> requests) {
        return each(requests.iterator(), Request::toJson);
    }

    private <T> Stream<Result> each(Iterator<T> source, Function<T, String> toJson) {
        Iterator<Result> results = new Iterator<>() {
            private final ArrayDeque<Result> ready = new ArrayDeque<>(EACH_GROUP);

            @Override
            public boolean hasNext() {
                if (ready.isEmpty()) {
                    // Item i: its JSON text, or the error it already has.
                    List<Object> group = new ArrayList<>(EACH_GROUP);
                    while (group.size() < EACH_GROUP && source.hasNext()) {
                        T item = source.next();
                        if (item == null) {
                            group.add(new SkycmdException("decide each", Status.INVALID_ARGUMENT.code(), "the request is null"));
                            continue;
                        }
                        try {
                            group.add(toJson.apply(item));
                        } catch (IllegalArgumentException e) {
                            group.add(new SkycmdException("decide each", Status.REQUEST.code(), e.getMessage()));
                        }
                    }
                    if (!group.isEmpty()) answerGroup(group, ready);
                }
                return !ready.isEmpty();
            }

            @Override
            public Result next() {
                if (!hasNext()) throw new NoSuchElementException();
                return ready.poll();
            }
        };
        return StreamSupport.stream(Spliterators.spliteratorUnknownSize(results, Spliterator.ORDERED | Spliterator.NONNULL), false);
    }

    /** Answers one group with one skycmd_decide_each call, a Result per item into {@code into}. */
    private void answerGroup(List<Object> group, ArrayDeque<Result> into) {
        SkycmdException whole = null;
        SkyEach each = new SkyEach();
        int[] slot = new int[group.size()];
        lock.readLock().lock();
        try {
            if (state.box == null) throw closed("decide each");
            for (int i = 0; i < group.size(); i++) {
                slot[i] = -1;
                if (group.get(i) instanceof String json && json.indexOf('\0') >= 0) {
                    // a NUL would cut the C string: this request's own error, not the stream's
                    group.set(i, new SkycmdException("decide each", Status.INVALID_ARGUMENT.code(),
                        "the request contains a NUL character (at index " + json.indexOf('\0') + ")"));
                } else if (group.get(i) instanceof String json) {
                    int st = each.add(json);
                    if (st != 0) throw new SkycmdException("decide each", st, each.message());
                    slot[i] = (int) each.count() - 1;
                }
            }
            if (each.count() > 0) {
                SkySession s = takeSession();
                try {
                    int st = each.decide(s);
                    if (st != 0) throw new SkycmdException("decide each", st, each.message());
                } finally {
                    giveSession(s);
                }
            }
            for (int i = 0; i < group.size(); i++) {
                if (slot[i] < 0) {
                    into.add(Result.failed((SkycmdException) group.get(i)));
                    continue;
                }
                int st = each.slotStatus(slot[i]);
                if (st != 0) {
                    into.add(Result.failed(new SkycmdException("decide each", st, each.slotMessage(slot[i]))));
                    continue;
                }
                SkyResponse r = new SkyResponse();
                try {
                    st = each.takeResponse(slot[i], r);
                    if (st != 0) throw new SkycmdException("decide each", st, each.message());
                    into.add(Result.of(new Response(r)));
                } finally {
                    r.delete();
                }
            }
        } catch (SkycmdException e) {
            whole = e;
        } finally {
            lock.readLock().unlock();
            each.delete();
        }
        if (whole != null) {
            // The whole group failed: every item gets that error (in order), nothing else.
            into.clear();
            for (Object item : group) into.add(Result.failed(item instanceof SkycmdException e ? e : whole));
        }
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
