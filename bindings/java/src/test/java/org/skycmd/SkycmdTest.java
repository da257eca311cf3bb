package org.skycmd;

import static org.junit.jupiter.api.Assertions.*;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.io.OutputStream;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalDouble;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.skycmd.internal.skycmd_status;

/**
 * Tests against a random s1-pico model: $SKYCMD_TEST_MODEL, or one made through
 * Skycmd.randomModel. If the library cannot make one (UNSUPPORTED), model tests are skipped
 * unless SKYCMD_REQUIRE_MODEL=1 (set by run-tests.sh).
 */
class SkycmdTest {
    static Path tmp;
    static Path model;
    static SkycmdException modelError;

    @BeforeAll
    static void setUp() throws IOException {
        tmp = Files.createTempDirectory("skycmd-java-test-");
        String env = System.getenv("SKYCMD_TEST_MODEL");
        if (env != null && !env.isEmpty()) {
            model = Paths.get(env);
            return;
        }
        model = tmp.resolve("s1-pico.gguf");
        try {
            Skycmd.randomModel("s1-pico", model, null);
        } catch (SkycmdException e) {
            modelError = e;
        }
    }

    @AfterAll
    static void tearDown() throws IOException {
        try (var s = Files.walk(tmp)) {
            s.sorted((a, b) -> b.compareTo(a)).forEach(p -> p.toFile().delete());
        }
    }

    static Path model() {
        if (modelError != null) {
            boolean require = "1".equals(System.getenv("SKYCMD_REQUIRE_MODEL"));
            if (!require) assumeTrue(modelError.status() != Status.UNSUPPORTED, "no random model yet: " + modelError.getMessage());
            throw modelError;
        }
        return model;
    }

    static String request() throws IOException {
        String p = System.getenv("SKYCMD_EXAMPLE_REQUEST");
        Path path = p != null && !p.isEmpty() ? Paths.get(p) : Paths.get("..", "..", "examples", "flappy-drone.json");
        return Files.readString(path, StandardCharsets.UTF_8);
    }

    @Test
    void statusValuesMatchHeader() {
        for (Status s : Status.values()) {
            if (s == Status.UNKNOWN) continue;
            assertEquals(s.code(), skycmd_status.swigToEnum(s.code()).swigValue());
            assertEquals("SKYCMD_" + (s == Status.OK ? "OK" : "E_" + s.name()), s.cName());
        }
        assertEquals("SKYCMD_E_CANCELLED", skycmd_status.swigToEnum(14).toString());
    }

    @Test
    void versionCheck() {
        assertTrue(Skycmd.HEADER_VERSION_NUMBER > 0);
        assertNull(Skycmd.loadError, "binding refuses its own library");
        Skycmd.checkVersion(Skycmd.HEADER_VERSION_NUMBER);
        assertTrue(Skycmd.versionNumber() >= Skycmd.HEADER_VERSION_NUMBER);
        for (long newer : new long[] {Skycmd.versionNumber() + 1, Skycmd.versionNumber() + 100, Skycmd.versionNumber() + 10000}) {
            SkycmdException e = assertThrows(SkycmdException.class, () -> Skycmd.checkVersion(newer));
            assertEquals(Status.VERSION, e.status());
            assertFalse(e.libraryMessage().isEmpty());
        }
        // Simulate a library older than the header: every entry point refuses.
        SkycmdException saved = Skycmd.loadError;
        try {
            Skycmd.loadError = new SkycmdException("check version", Status.VERSION.code(), "simulated old library");
            assertEquals(Status.VERSION, assertThrows(SkycmdException.class, () -> Model.open(tmp.resolve("x.gguf"))).status());
            assertEquals(Status.VERSION, assertThrows(SkycmdException.class,
                    () -> Skycmd.randomModel("s1-pico", tmp.resolve("x.gguf"), null)).status());
        } finally {
            Skycmd.loadError = saved;
        }
    }

    static void checkAnswers(Response r) {
        assertEquals(3, r.answers().size(), r.json());
        assertTrue(r.inputTokens() > 0);
        String[] ids = {"action", "danger", "margin"};
        AnswerType[] types = {AnswerType.CHOICE, AnswerType.NOUL, AnswerType.SCORE};
        // Keyed by question id, in request order.
        assertEquals(List.of(ids), List.copyOf(r.answers().keySet()));
        List<Answer> inOrder = List.copyOf(r.answers().values());
        for (int i = 0; i < 3; i++) {
            Answer a = inOrder.get(i);
            assertEquals(ids[i], a.id());
            assertSame(a, r.answers().get(ids[i]));
            assertEquals(types[i], a.type());
            double sum = 0;
            for (Probability p : a.probabilities()) {
                assertTrue(p.p() >= 0 && p.p() <= 1);
                sum += p.p();
            }
            assertEquals(1.0, sum, 1e-6);
        }
        Answer act = r.answer("action").orElseThrow();
        assertEquals(List.of("thrust", "glide"), act.probabilities().stream().map(Probability::key).toList());
        Probability best = act.probabilities().get(0).p() >= act.probabilities().get(1).p()
                ? act.probabilities().get(0) : act.probabilities().get(1);
        assertEquals(best.key(), act.choice());
        assertEquals(best.p(), act.value());
        assertTrue(act.confidence().isPresent());
        assertFalse(Double.isNaN(act.confidence().getAsDouble()));
        Answer dn = r.answer("danger").orElseThrow();
        assertEquals(List.of("false", "true"), dn.probabilities().stream().map(Probability::key).toList());
        assertEquals(dn.probabilities().get(1).p(), dn.value());
        assertTrue(dn.confidence().isEmpty());
        assertNull(dn.choice());
        Answer mg = r.answer("margin").orElseThrow();
        assertEquals(3, mg.probabilities().size());
        double exp = 0;
        for (int i = 0; i < 3; i++) {
            assertEquals(Integer.toString(i), mg.probabilities().get(i).key());
            exp += i * mg.probabilities().get(i).p();
        }
        assertEquals(exp, mg.value(), 1e-9);
        assertTrue(mg.confidence().isPresent());
        assertEquals(List.of("none", "tight", "comfortable"), mg.legend());
        assertEquals(List.of(), act.legend());
        assertEquals(List.of(), dn.legend());
        assertFalse(r.model().isEmpty());
        assertTrue(r.json().contains("\"model\""), r.json());
        assertTrue(r.json().contains("\"answers\"") && r.json().contains("\"" + act.choice() + "\""));
    }

    /** The cross-check form: every double as the 16 hex digits of its bits. */
    static String dump(Response r) {
        StringBuilder b = new StringBuilder();
        b.append("input_tokens ").append(r.inputTokens()).append('\n');
        for (Answer a : r.answers().values()) {
            b.append("answer ").append(a.id()).append(' ').append(a.type().name().toLowerCase())
             .append(" choice=").append(a.choice() == null ? "" : a.choice())
             .append(" value=").append(bits(a.value())).append(" confidence=").append(bits(a.confidence())).append('\n');
            for (Probability p : a.probabilities()) b.append("option ").append(p.key()).append(' ').append(bits(p.p())).append('\n');
        }
        return b.toString();
    }

    static String bits(double v) { return String.format("%016x", Double.doubleToRawLongBits(v)); }

    static String bits(OptionalDouble v) { return v.isPresent() ? bits(v.getAsDouble()) : "none"; }

    @Test
    void exampleRequestAnswered() throws IOException {
        Path m = model();
        String req = request();
        try (Model mod = Model.open(m)) {
            Response r = mod.decide(req);
            checkAnswers(r);
            assertTrue(mod.intParameter("decision.max_head_tokens") > 0);
            assertEquals(Status.NOT_FOUND, assertThrows(SkycmdException.class, () -> mod.intParameter("no.such.key")).status());
            assertEquals(dump(r), dump(mod.decide(req)));
            String dir = System.getenv("SKYCMD_DUMP_DIR");
            if (dir != null && !dir.isEmpty()) Files.writeString(Paths.get(dir, "java.txt"), dump(r));
        }
    }

    @Test
    void errors() throws IOException {
        SkycmdException e = assertThrows(SkycmdException.class, () -> Model.open(tmp.resolve("does-not-exist.gguf")));
        assertEquals(Status.IO, e.status());
        assertTrue(e.libraryMessage().contains("does-not-exist"), e.getMessage());
        Path junk = tmp.resolve("junk.gguf");
        Files.writeString(junk, "this is not a gguf file at all");
        assertEquals(Status.FORMAT, assertThrows(SkycmdException.class, () -> Model.open(junk)).status());
        assertEquals(Status.IO, assertThrows(SkycmdException.class, () -> Skycmd.inspect(tmp.resolve("nope.gguf"), null)).status());

        Model mod = Model.open(model());
        e = assertThrows(SkycmdException.class, () -> mod.decide("{\"state\": \"x\", \"questions\": {"));
        assertEquals(Status.JSON, e.status());
        assertFalse(e.libraryMessage().isEmpty());
        e = assertThrows(SkycmdException.class, () -> mod.decide(
                "{\"state\": \"x\", \"questions\": {\"a\": {\"type\": \"choice\", \"instructions\": \"?\", \"criteria\": {}}}}"));
        assertEquals(Status.REQUEST, e.status());
        assertTrue(e.libraryMessage().contains("criteria"), e.getMessage());
        mod.close();
        mod.close();
        assertTrue(mod.isClosed());
        String req = request();
        assertEquals(Status.MISUSE, assertThrows(SkycmdException.class, () -> mod.decide(req)).status());
        assertThrows(SkycmdException.class, () -> Skycmd.randomModel("no-such-preset", tmp.resolve("p.gguf"), null));
        assertThrows(SkycmdException.class, () -> Skycmd.convert(tmp.resolve("no-such-dir"), tmp.resolve("c.gguf"), null));
        assertFalse(Files.exists(tmp.resolve("c.gguf")));
    }

    /**
     * The built-in model: pom.xml sets SKYCMD_DEFAULT_MODEL to the repository's
     * models/s1-pico-flappy.gguf (the JNI library carries libskycmd, so nothing is beside it);
     * openDefault answers the example request exactly as open of that path.
     */
    @Test
    void defaultModelOpensLikeItsPath() throws IOException {
        String env = System.getenv("SKYCMD_DEFAULT_MODEL");
        assumeTrue(env != null && !env.isEmpty(), "SKYCMD_DEFAULT_MODEL is not set (pom.xml sets it)");
        Path p = Skycmd.defaultModelPath();
        assertEquals(Paths.get(env), p);
        String req = request();
        String want;
        try (Model mod = Model.open(p)) {
            want = dump(mod.decide(req));
        }
        try (Model mod = Model.openDefault(); Model one = Model.openDefault(new Options().threads(1))) {
            assertEquals("s1-pico-flappy", mod.name());
            assertEquals(want, dump(mod.decide(req)));
            assertEquals(want, dump(one.decide(req)));
        }
    }

    /**
     * Error naming: code() is the status name, statusNumber() its C value; a file that does not
     * exist has a NoSuchFileException cause (naming the file), other failures none.
     */
    @Test
    void errorCodesAndNoSuchFile() throws IOException {
        Path missing = tmp.resolve("does-not-exist.gguf");
        SkycmdException e = assertThrows(SkycmdException.class, () -> Model.open(missing));
        assertEquals("SKYCMD_E_IO", e.code());
        assertEquals(4, e.statusNumber());
        assertEquals(Status.IO, e.status());
        assertTrue(e.fileNotFound());
        assertTrue(e.errno() > 0);
        java.nio.file.NoSuchFileException nsf = assertInstanceOf(java.nio.file.NoSuchFileException.class, e.getCause());
        assertEquals(missing.toString(), nsf.getFile());
        assertTrue(e.getMessage().startsWith("skycmd open: SKYCMD_E_IO: "), e.getMessage());
        e = assertThrows(SkycmdException.class, () -> Skycmd.inspect(missing, null));
        assertInstanceOf(java.nio.file.NoSuchFileException.class, e.getCause());
        Path junk = tmp.resolve("junk-code.gguf");
        Files.writeString(junk, "not a gguf file");
        e = assertThrows(SkycmdException.class, () -> Model.open(junk));
        assertEquals("SKYCMD_E_FORMAT", e.code());
        assertEquals(5, e.statusNumber());
        assertFalse(e.fileNotFound());
        assertNull(e.getCause());
        assertEquals(0, e.errno());
        assertEquals("SKYCMD_E_JSON", new SkycmdException("decide", 8, "x").code());
    }

    @Test
    void inspectAndQuantize() throws IOException {
        Path m = model();
        assertTrue(Skycmd.inspect(m, null).contains("modern-bert"));
        String js = Skycmd.inspect(m, new Options().json(true)).trim();
        assertTrue(js.startsWith("{") && js.endsWith("}"), js);
        Path q = tmp.resolve("q8.gguf");
        Skycmd.quantize(m, q, new Options().type(Options.Type.Q8_0));
        try (Model mod = Model.open(q)) {
            checkAnswers(mod.decide(request()));
        }
        Path seeded = tmp.resolve("seeded.gguf");
        Skycmd.randomModel("s1-pico", seeded, new Options().seed(7));
        assertTrue(Files.size(seeded) > 0);
    }

    @Test
    void concurrentDecide() throws Exception {
        String req = request();
        try (Model mod = Model.open(model())) {
            String want = dump(mod.decide(req));
            ExecutorService pool = Executors.newFixedThreadPool(8);
            List<Future<String>> fs = new ArrayList<>();
            for (int i = 0; i < 80; i++) fs.add(pool.submit(() -> dump(mod.decide(req))));
            for (Future<String> f : fs) assertEquals(want, f.get());
            pool.shutdown();
        }
    }

    static long rssKiB() throws IOException {
        String[] f = Files.readString(Paths.get("/proc/self/statm")).trim().split("\\s+");
        return Long.parseLong(f[1]) * 4;
    }

    /**
     * Leak check. Exact at the handle level: every model opened in the loop (every tenth one
     * dropped unclosed, for the Cleaner) is freed again. At the process level: RSS between
     * round 300 and round 600 must not grow by 32 MiB (a leaked model, ~1.5 MB, per round
     * would be ~450 MiB); the JVM's own heap growth makes a tighter RSS bound meaningless.
     */
    @Test
    void openDecideCloseLoop() throws Exception {
        Path m = model();
        String req = request();
        int live0 = Model.liveNativeModels();
        long rss300 = 0;
        for (int i = 0; i < 600; i++) {
            if (i % 10 == 0) {
                Model.open(m).decide(req); // left for the Cleaner
            } else {
                try (Model mod = Model.open(m)) { mod.decide(req); }
            }
            if (i == 299) {
                System.gc();
                rss300 = rssKiB();
            }
        }
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (Model.liveNativeModels() > live0 && System.nanoTime() < deadline) {
            System.gc();
            Thread.sleep(20);
        }
        long rss600 = rssKiB();
        System.out.println("java loop: live native models " + Model.liveNativeModels() + " (before " + live0
                + "); RSS after 300 rounds " + rss300 + " KiB, after 600 " + rss600 + " KiB, growth " + (rss600 - rss300) + " KiB");
        assertEquals(live0, Model.liveNativeModels(), "native models leaked");
        assertTrue(rss600 - rss300 < 32768, "RSS grew by " + (rss600 - rss300) + " KiB");
    }

    static Path nativeLibrary() throws Exception {
        Path classes = Paths.get(NativeLoader.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        return classes.resolve(NativeLoader.RESOURCE.substring(1));
    }

    /** The jar path of NativeLoader: the one native library extracts from a jar. */
    @Test
    void nativeLibraryExtractsFromAJar() throws Exception {
        Path lib = nativeLibrary();
        Path jar = tmp.resolve("native.jar");
        try (OutputStream os = Files.newOutputStream(jar); JarOutputStream jos = new JarOutputStream(os)) {
            jos.putNextEntry(new JarEntry(NativeLoader.RESOURCE.substring(1)));
            jos.write(Files.readAllBytes(lib));
            jos.closeEntry();
        }
        try (var cl = new URLClassLoader(new URL[] {jar.toUri().toURL()}, null) {
                Class<?> define() throws Exception {
                    Path classes = lib.getParent().getParent().getParent();
                    byte[] b = Files.readAllBytes(classes.resolve("org/skycmd/Probability.class"));
                    return defineClass("org.skycmd.Probability", b, 0, b.length);
                }
            }) {
            assertEquals("jar", cl.getResource(NativeLoader.RESOURCE.substring(1)).getProtocol());
            // Run the extraction against a class whose resources come from the jar.
            Method extract = NativeLoader.class.getDeclaredMethod("extract", Class.class);
            extract.setAccessible(true);
            Path out = (Path) extract.invoke(null, cl.define());
            assertEquals(System.mapLibraryName("skycmd_jni"), out.getFileName().toString());
            assertArrayEquals(Files.readAllBytes(lib), Files.readAllBytes(out));
        }
    }

    /** The library is self-contained: its NEEDED entries are the C runtime only. */
    @Test
    void nativeLibraryNeedsOnlyTheCRuntime() throws Exception {
        if (NativeLoader.os().equals("darwin")) {
            // Mach-O: the load commands name the libraries (otool -L lists the library's own
            // install name too); libSystem is the C runtime.
            Process p = new ProcessBuilder("otool", "-L", nativeLibrary().toString()).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertEquals(0, p.waitFor(), out);
            String[] lines = out.trim().split("\n");
            assertTrue(lines.length > 1, out);
            for (int i = 1; i < lines.length; i++) {
                String n = lines[i].trim().split(" ")[0];
                if (n.equals("@rpath/" + NativeLoader.FILE)) continue;
                assertTrue(n.matches("/usr/lib/libSystem\\.B\\.dylib"), "unexpected library " + n + " in " + out);
            }
            return;
        }
        Process p = new ProcessBuilder("readelf", "-d", nativeLibrary().toString()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), out);
        List<String> needed = new ArrayList<>();
        for (String line : out.split("\n")) {
            int a = line.indexOf("(NEEDED)");
            if (a >= 0) needed.add(line.substring(line.indexOf('[') + 1, line.indexOf(']')));
        }
        assertFalse(needed.isEmpty(), out);
        for (String n : needed) {
            assertTrue(n.matches("(libc|libm|libpthread|libdl|librt)\\.so\\.[0-9]+|ld-linux.*"), "unexpected NEEDED " + n + " in " + needed);
        }
        assertTrue(out.contains("NEEDED") && !out.contains("libskycmd") && !out.contains("cjson") && !out.contains("utf8proc"), out);
    }

    /** The example request written with the typed builders. */
    static Request exampleRequest() {
        return Request.of("vy 0 dx 36 up 9 dn 7 nxt 10 alt 32")
                .question("action", Choice.of("Which input keeps the drone flying through the next gap?")
                        .criterion("thrust", "fire the rotors for an upward impulse")
                        .criterion("glide", "let gravity pull the drone down"))
                .question("danger", Noul.of("Will the drone crash within the next half second if it keeps gliding?"))
                .question("margin", Score.of("How much room is left above and below the drone?")
                        .levels("none", "tight", "comfortable"));
    }

    @Test
    void typedRequestAnswersLikeTheJsonFile() throws IOException {
        Request req = exampleRequest();
        assertEquals(List.of("action", "danger", "margin"), req.questionIds());
        try (Model mod = Model.open(model())) {
            Response fromFile = mod.decide(request());
            Response typed = mod.decide(req);
            checkAnswers(typed);
            assertEquals(dump(fromFile), dump(typed));
            // Equal answers are equal values (the noul's absent confidence is no NaN).
            assertEquals(fromFile.answers(), typed.answers());
            assertEquals(List.of("action"), List.copyOf(typed.choices().keySet()));
            assertEquals(List.of("danger"), List.copyOf(typed.nouls().keySet()));
            assertEquals(List.of("margin"), List.copyOf(typed.scores().keySet()));
            Answer act = typed.choices().get("action");
            assertEquals(act.value(), act.probability(act.choice()).getAsDouble());
            assertTrue(act.probability("hover").isEmpty());
            assertEquals(mod.name(), typed.model());
            // The request's model field routes a server; the response names the model that answered.
            assertEquals(mod.name(), mod.decide(req.model("someone-else")).model());
            Response json = mod.decide(Request.of("x").question("s", Score.of("?").levels("low")
                    .level(Content.json("{\"high\": [1, 2]}"))));
            List<String> legend = json.scores().get("s").legend();
            assertEquals(2, legend.size());
            assertEquals("low", legend.get(0));
            assertTrue(legend.get(1).startsWith("{") && legend.get(1).contains("high"), legend.get(1));
        }
    }

    @Test
    void typedRequestJsonAndValidation() {
        String json = Request.of(Content.json("{\"vy\": 0}")).model("s1")
                .question("q\"1", Noul.of("a \"quoted\"\n line\u0001").whenTrue("yes").whenFalse(Content.json("[1, 2]")))
                .question("c", Choice.of((Content) null).criterion("x", (Content) null))
                .toJson();
        assertEquals("{\"model\": \"s1\", \"state\": {\"vy\": 0}, \"questions\": {\"q\\\"1\": {\"type\": \"noul\", "
                + "\"instructions\": \"a \\\"quoted\\\"\\n line\\u0001\", \"criteria\": {\"true\": \"yes\", \"false\": [1, 2]}}, "
                + "\"c\": {\"type\": \"choice\", \"criteria\": {\"x\": null}}}}", json);
        assertThrows(IllegalArgumentException.class, () -> Request.of("s").toJson());
        assertThrows(IllegalArgumentException.class, () -> Request.of("s").question("a", Choice.of("?")).toJson());
        assertThrows(IllegalArgumentException.class, () -> Request.of("s").question("a", Score.of("?")).toJson());
        assertThrows(IllegalArgumentException.class, () -> Request.of("s").question("a", Noul.of((Content) null)).toJson());
        assertThrows(IllegalArgumentException.class, () -> Choice.of("?").criterion("a", "x").criterion("a", "y"));
        assertThrows(IllegalArgumentException.class, () -> Request.of("s").question("a", Noul.of("?")).question("a", Noul.of("?")));
    }

    /** Text crosses JNI as real UTF-8 (not JNI's modified UTF-8): an emoji survives a round trip. */
    @Test
    void tokenizerOfTheModel() throws IOException {
        String text = "the drone \uD83D\uDE81 glides \u00fcber caf\u00e9s \u4e2d\u6587";
        try (Model mod = Model.open(model())) {
            Tokenizer tok = mod.tokenizer();
            int[] ids = tok.encode(text);
            assertTrue(ids.length > 0);
            assertEquals(ids.length, tok.count(text));
            assertEquals(text, tok.decode(ids));
            assertTrue(tok.vocabSize() > 0);
            assertTrue(tok.token(ids[0]).isPresent());
            assertTrue(tok.token(-1).isEmpty());
            assertTrue(tok.token(tok.vocabSize()).isEmpty());
            assertArrayEquals(ids, mod.tokenizer().encode(text));
            // The same emoji in a request reaches the library intact: more tokens than without.
            String plain = request();
            String withEmoji = plain.replace("vy 0 dx 36", "vy 0 \uD83D\uDE81 dx 36");
            assertTrue(mod.decide(withEmoji).inputTokens() > mod.decide(plain).inputTokens());
            tok.close(); // a model's tokenizer: nothing happens
            assertEquals(ids.length, tok.count(text));
            mod.close(); // the borrowed tokenizer does not keep the model open
            assertEquals(Status.MISUSE, assertThrows(SkycmdException.class, () -> tok.encode("x")).status());
        }
    }

    @Test
    void tokenizerFromJson() {
        Path json = Paths.get("..", "..", "tests", "fixtures", "tokenizer", "vocab1024", "tokenizer.json");
        // A missing file: Status.IO with Java's NoSuchFileException as the cause, as Model.open.
        Path none = tmp.resolve("none.json");
        SkycmdException missing = assertThrows(SkycmdException.class, () -> Tokenizer.open(none));
        assertEquals(Status.IO, missing.status());
        assertTrue(missing.fileNotFound());
        assertEquals(2, missing.errno()); // ENOENT
        assertEquals(none.toString(), assertInstanceOf(java.nio.file.NoSuchFileException.class, missing.getCause()).getFile());
        // A file that exists but is no tokenizer: no not-found cause.
        SkycmdException junk = assertThrows(SkycmdException.class, () -> Tokenizer.open(model()));
        assertFalse(junk.fileNotFound());
        assertNull(junk.getCause());
        Tokenizer tok = Tokenizer.open(json);
        assertEquals(1024, tok.vocabSize());
        String text = "Hello, world! \u00e9\u00e8 \uD83D\uDE00";
        int[] ids = tok.encode(text);
        assertEquals(text, tok.decode(ids));
        assertEquals(ids.length, tok.count(text));
        assertEquals("", tok.decode(new int[0]));
        assertNotEquals(Status.OK, assertThrows(SkycmdException.class, () -> tok.decode(new int[] {1 << 30})).status());
        tok.close();
        tok.close();
        assertEquals(Status.MISUSE, assertThrows(SkycmdException.class, () -> tok.encode("x")).status());
    }

    @Test
    void decideBatchAnswersLikeSingleDecides() throws IOException {
        String req = request();
        String other = req.replace("vy 0 dx 36", "vy 3 dx 12");
        try (Model mod = Model.open(model())) {
            List<Response> rs = mod.decideBatch(List.of(req, other, req));
            assertEquals(3, rs.size());
            assertEquals(dump(mod.decide(req)), dump(rs.get(0)));
            assertEquals(dump(mod.decide(other)), dump(rs.get(1)));
            assertEquals(dump(rs.get(0)), dump(rs.get(2)));
            List<Response> typed = mod.decideBatchRequests(List.of(exampleRequest()));
            assertEquals(dump(rs.get(0)), dump(typed.get(0)));
            SkycmdException e = assertThrows(SkycmdException.class, () -> mod.decideBatch(List.of(req, "{\"state\": 1}")));
            assertEquals(Status.REQUEST, e.status());
            assertTrue(e.libraryMessage().startsWith("request 1: "), e.libraryMessage());
            assertTrue(mod.decideBatch(List.of()).isEmpty());
        }
    }

    @Test
    void openBufferAnswersLikeTheFile() throws IOException {
        byte[] bytes = Files.readAllBytes(model());
        String req = request();
        String want;
        try (Model mod = Model.open(model())) {
            want = dump(mod.decide(req));
        }
        try (Model mod = Model.openBuffer(bytes)) {
            java.util.Arrays.fill(bytes, (byte) 0); // the model keeps its own copy
            assertEquals(want, dump(mod.decide(req)));
        }
        assertEquals(Status.FORMAT, assertThrows(SkycmdException.class, () -> Model.openBuffer(new byte[64])).status());
        assertEquals(Status.INVALID_ARGUMENT, assertThrows(SkycmdException.class, () -> Model.openBuffer(null)).status());
    }

    @Test
    void quantizeReportsProgressAndCancels() throws Exception {
        Path m = model();
        Path out = tmp.resolve("progress-q8.gguf");
        List<long[]> seen = new java.util.concurrent.CopyOnWriteArrayList<>();
        Progress p = new Progress((done, total) -> seen.add(new long[] {done, total}));
        Skycmd.quantize(m, out, new Options().type(Options.Type.Q8_0), p);
        assertTrue(Files.size(out) > 0);
        assertFalse(seen.isEmpty());
        assertTrue(p.reports() >= seen.size());
        long[] last = seen.get(seen.size() - 1);
        assertEquals(last[1], last[0], "the last report is complete");
        assertEquals(p.total(), p.done());
        for (int i = 1; i < seen.size(); i++) assertTrue(seen.get(i)[0] >= seen.get(i - 1)[0]);

        // Cancelled before it starts: the first report stops it; no output.
        Path none = tmp.resolve("cancelled.gguf");
        Progress early = new Progress();
        early.cancel();
        assertTrue(early.isCancelled());
        SkycmdException e = assertThrows(SkycmdException.class,
                () -> Skycmd.quantize(m, none, new Options().type(Options.Type.Q8_0), early));
        assertEquals(Status.CANCELLED, e.status());
        assertFalse(Files.exists(none));

        // Cancelled from the listener at the first report: nothing more is reported.
        Progress[] self = new Progress[1];
        List<Long> firstOnly = new java.util.concurrent.CopyOnWriteArrayList<>();
        self[0] = new Progress((done, total) -> { firstOnly.add(done); self[0].cancel(); });
        assertEquals(Status.CANCELLED, assertThrows(SkycmdException.class,
                () -> Skycmd.quantize(m, none, new Options().type(Options.Type.Q8_0), self[0])).status());
        assertEquals(1, firstOnly.size());
        assertEquals(1, self[0].reports());
        assertFalse(Files.exists(none));

        // Cancelled from another thread while the call is paused in its first report.
        java.util.concurrent.CountDownLatch reported = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch cancelledByOther = new java.util.concurrent.CountDownLatch(1);
        Thread caller = Thread.currentThread();
        Progress remote = new Progress((done, total) -> {
            assertSame(caller, Thread.currentThread(), "reports come on the calling thread");
            reported.countDown();
            try {
                assertTrue(cancelledByOther.await(10, java.util.concurrent.TimeUnit.SECONDS));
            } catch (InterruptedException ie) {
                throw new IllegalStateException(ie);
            }
        });
        Thread other = new Thread(() -> {
            try {
                reported.await();
                remote.cancel();
                cancelledByOther.countDown();
            } catch (InterruptedException ignored) {
                // the test fails on its own timeout
            }
        });
        other.start();
        assertEquals(Status.CANCELLED, assertThrows(SkycmdException.class,
                () -> Skycmd.quantize(m, none, new Options().type(Options.Type.Q8_0), remote)).status());
        other.join();
        assertEquals(1, remote.reports());
        assertFalse(Files.exists(none));

        // A throwing listener stops the call, and its exception is what the caller sees.
        Progress throwing = new Progress((done, total) -> { throw new IllegalStateException("stop here"); });
        IllegalStateException ise = assertThrows(IllegalStateException.class,
                () -> Skycmd.quantize(m, none, new Options().type(Options.Type.Q8_0), throwing));
        assertEquals("stop here", ise.getMessage());
        assertEquals(1, throwing.reports());
        assertFalse(Files.exists(none));
        try (var dir = Files.list(tmp)) {
            assertTrue(dir.noneMatch(f -> f.getFileName().toString().startsWith("cancelled.gguf")), "partial output left");
        }
        // The same Progress class on the other file calls: random model and convert.
        Progress rnd = new Progress();
        Skycmd.randomModel("s1-pico", tmp.resolve("progress-random.gguf"), null, rnd);
        assertTrue(Files.size(tmp.resolve("progress-random.gguf")) > 0);
        Path laya = tmp.resolve("progress-laya");
        Skycmd.randomModel("s1-pico", laya, new Options().layout(Options.Layout.LAYA));
        Progress conv = new Progress();
        Skycmd.convert(laya, tmp.resolve("progress-conv.gguf"), null, conv);
        assertTrue(conv.reports() > 0 && conv.done() == conv.total(), conv.done() + " of " + conv.total());
        Progress convCancel = new Progress();
        convCancel.cancel();
        assertEquals(Status.CANCELLED, assertThrows(SkycmdException.class,
                () -> Skycmd.convert(laya, tmp.resolve("progress-conv2.gguf"), null, convCancel)).status());
        assertFalse(Files.exists(tmp.resolve("progress-conv2.gguf")));
    }

    @Test
    void answersAreAMapInRequestOrder() throws IOException {
        try (Model mod = Model.open(model())) {
            Response r = mod.decide(request());
            assertEquals(List.of("action", "danger", "margin"), List.copyOf(r.answers().keySet()));
            assertInstanceOf(java.util.Map.class, r.answers());
            assertEquals(AnswerType.NOUL, r.answers().get("danger").type());
            assertSame(r.answers().get("margin"), r.answer("margin").orElseThrow());
            assertNull(r.answers().get("nope"));
            assertTrue(r.answer("nope").isEmpty());
            assertThrows(UnsupportedOperationException.class, () -> r.answers().remove("action"));
            // The typed views keep request order too.
            assertEquals(List.of("action"), List.copyOf(r.choices().keySet()));
            // Another order in the request is another order in the map.
            Response swapped = mod.decide(Request.of("vy 0 dx 36 up 9 dn 7 nxt 10 alt 32")
                    .question("zeta", Noul.of("Will the drone crash?"))
                    .question("alpha", Noul.of("Is the gap above?")));
            assertEquals(List.of("zeta", "alpha"), List.copyOf(swapped.answers().keySet()));
        }
    }

    /** An Iterable that counts how many items were taken from it (to see the stream is lazy). */
    static <T> Iterable<T> counting(Iterable<T> source, int[] taken) {
        return () -> new java.util.Iterator<T>() {
            final java.util.Iterator<T> it = source.iterator();
            public boolean hasNext() { return it.hasNext(); }
            public T next() { taken[0]++; return it.next(); }
        };
    }

    @Test
    void decideEachStreamsPerItemResults() throws IOException {
        String req = request();
        String other = req.replace("vy 0 dx 36", "vy 3 dx 12");
        try (Model mod = Model.open(model())) {
            String wantReq = dump(mod.decide(req)), wantOther = dump(mod.decide(other));
            // 70 items (three groups of at most 32), bad ones in the first, second and third.
            List<String> in = new ArrayList<>();
            for (int i = 0; i < 70; i++) in.add(i % 2 == 0 ? req : other);
            in.set(1, "{not json");
            in.set(33, "{\"state\": 1}");
            in.set(40, null);
            in.set(69, "");
            int[] taken = {0};
            java.util.Iterator<Result> it = mod.decideEach(counting(in, taken)).iterator();
            List<Result> out = new ArrayList<>();
            out.add(it.next());
            assertEquals(32, taken[0], "one group read ahead, no more");
            while (out.size() < 33) out.add(it.next());
            assertEquals(64, taken[0]);
            it.forEachRemaining(out::add);
            assertEquals(70, taken[0]);
            assertEquals(70, out.size());
            for (int i = 0; i < 70; i++) {
                Result r = out.get(i);
                switch (i) {
                    case 1, 69 -> {
                        assertFalse(r.isOk());
                        assertEquals("SKYCMD_E_JSON", r.error().orElseThrow().code(), r.toString());
                    }
                    case 33 -> assertEquals(Status.REQUEST, r.error().orElseThrow().status());
                    case 40 -> assertEquals(Status.INVALID_ARGUMENT, r.error().orElseThrow().status());
                    default -> {
                        assertTrue(r.isOk(), i + ": " + r);
                        assertTrue(r.error().isEmpty());
                        assertEquals(i % 2 == 0 ? wantReq : wantOther, dump(r.response()), "item " + i);
                    }
                }
            }
            // A failed item's response() throws its error, with the status name and message.
            SkycmdException e = assertThrows(SkycmdException.class, () -> out.get(1).response());
            assertSame(out.get(1).error().orElseThrow(), e);
            assertTrue(e.getMessage().startsWith("skycmd decide each: SKYCMD_E_JSON: "), e.getMessage());
            assertFalse(e.libraryMessage().isEmpty());

            // Typed requests; one the builder refuses (no question) is its item's REQUEST error.
            List<Result> typed = mod.decideEachRequests(List.of(exampleRequest(), Request.of("s"), exampleRequest())).toList();
            assertEquals(3, typed.size());
            assertEquals(wantReq, dump(typed.get(0).response()));
            assertEquals(Status.REQUEST, typed.get(1).error().orElseThrow().status());
            assertEquals(wantReq, dump(typed.get(2).response()));

            assertEquals(0, mod.decideEach(List.of()).count());
            // An endless source: only what is consumed (rounded up to a group) is read.
            int[] endless = {0};
            Iterable<String> forever = counting(() -> java.util.stream.Stream.generate(() -> req).iterator(), endless);
            assertEquals(40, mod.decideEach(forever).limit(40).filter(Result::isOk).count());
            assertEquals(64, endless[0]);

        }
        // The model closed between groups: the next group's items carry MISUSE, in order.
        Model closing = Model.open(model());
        try {
            java.util.Iterator<Result> late = closing.decideEach(java.util.Collections.nCopies(40, req)).iterator();
            for (int i = 0; i < 32; i++) assertTrue(late.next().isOk());
            closing.close();
            int n = 0;
            while (late.hasNext()) {
                assertEquals(Status.MISUSE, late.next().error().orElseThrow().status());
                n++;
            }
            assertEquals(8, n);
        } finally {
            closing.close();
        }
    }

    @Test
    void openAsyncOpensReportsAndFails() throws Exception {
        String req = request();
        String want;
        try (Model mod = Model.open(model())) {
            want = dump(mod.decide(req));
        }
        List<long[]> seen = new java.util.concurrent.CopyOnWriteArrayList<>();
        List<Thread> on = new java.util.concurrent.CopyOnWriteArrayList<>();
        Progress p = new Progress((done, total) -> { seen.add(new long[] {done, total}); on.add(Thread.currentThread()); });
        try (Model mod = Model.openAsync(model(), null, p).get(60, java.util.concurrent.TimeUnit.SECONDS)) {
            assertEquals(want, dump(mod.decide(req)));
        }
        assertFalse(seen.isEmpty(), "the load reported its progress");
        long[] last = seen.get(seen.size() - 1);
        assertEquals(last[1], last[0], "the last report is complete");
        assertTrue(on.stream().allMatch(t -> t.getName().equals("skycmd-open")), "reports on the loading thread");
        try (Model mod = Model.openAsync(model()).get(60, java.util.concurrent.TimeUnit.SECONDS)) {
            assertEquals(want, dump(mod.decide(req)));
        }
        // The synchronous open takes the same Progress argument.
        Progress sync = new Progress();
        try (Model mod = Model.open(model(), null, sync)) {
            assertFalse(mod.isClosed());
            // More than one report: so a load stopped at its first (the cancel test) is cut short.
            assertTrue(sync.reports() > 1, "reports: " + sync.reports());
            assertEquals(sync.total(), sync.done());
        }
        // A missing file: the future fails with open's exception (NoSuchFileException cause).
        java.util.concurrent.ExecutionException ee = assertThrows(java.util.concurrent.ExecutionException.class,
                () -> Model.openAsync(tmp.resolve("missing-async.gguf")).get(60, java.util.concurrent.TimeUnit.SECONDS));
        SkycmdException e = assertInstanceOf(SkycmdException.class, ee.getCause());
        assertTrue(e.fileNotFound());
    }

    @Test
    void cancellingOpenAsyncCancelsTheLoad() throws Exception {
        Path m = model();
        int live = Model.liveNativeModels();
        ExecutorService loader = Executors.newSingleThreadExecutor();
        try {
            // The load pauses in its first report until the future is cancelled: it then stops
            // there (CANCELLED), reports nothing more and leaves no model open.
            java.util.concurrent.CountDownLatch reported = new java.util.concurrent.CountDownLatch(1);
            java.util.concurrent.CountDownLatch cancelled = new java.util.concurrent.CountDownLatch(1);
            Progress p = new Progress((done, total) -> {
                reported.countDown();
                try {
                    assertTrue(cancelled.await(30, java.util.concurrent.TimeUnit.SECONDS));
                } catch (InterruptedException ie) {
                    throw new IllegalStateException(ie);
                }
            });
            java.util.concurrent.CompletableFuture<Model> f = Model.openAsync(m, null, p, loader);
            assertTrue(reported.await(30, java.util.concurrent.TimeUnit.SECONDS));
            assertTrue(f.cancel(true));
            assertTrue(p.isCancelled(), "cancelling the future cancels its progress");
            cancelled.countDown();
            assertThrows(java.util.concurrent.CancellationException.class, f::join);
            // The load's end: a task queued behind it runs once it is over.
            loader.submit(() -> { }).get(30, java.util.concurrent.TimeUnit.SECONDS);
            assertEquals(1, p.reports(), "the load stopped at the report it was cancelled in");
            assertEquals(live, Model.liveNativeModels(), "no model left open");

            // Without a Progress of the caller's: the future's own flag stops the load. The
            // executor is held busy, so the load has not started when it is cancelled.
            java.util.concurrent.CountDownLatch hold = new java.util.concurrent.CountDownLatch(1);
            loader.submit(() -> { hold.await(); return null; });
            java.util.concurrent.CompletableFuture<Model> g = Model.openAsync(m, null, null, loader);
            assertTrue(g.cancel(false));
            hold.countDown();
            loader.submit(() -> { }).get(30, java.util.concurrent.TimeUnit.SECONDS);
            assertTrue(g.isCancelled());
            assertEquals(live, Model.liveNativeModels());
        } finally {
            loader.shutdownNow();
        }
    }

    /** A String with a NUL character is refused (the C string would end there), never cut. */
    @Test
    void stringsWithANulAreRefusedNotCut() throws IOException {
        String req = request();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new Options().modelName("a\0b"));
        assertTrue(e.getMessage().contains("modelName"), e.getMessage());
        try (Model mod = Model.open(model())) {
            e = assertThrows(IllegalArgumentException.class, () -> mod.decide(req + "\0garbage"));
            assertTrue(e.getMessage().contains("requestJson"), e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> mod.decideBatch(List.of(req, req + "\0")));
            Tokenizer tok = mod.tokenizer();
            e = assertThrows(IllegalArgumentException.class, () -> tok.encode("ab\0cd"));
            assertTrue(e.getMessage().contains("text"), e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> tok.count("ab\0cd"));
            assertThrows(IllegalArgumentException.class, () -> mod.intParameter("embedding_length\0x"));
            List<Result> each = mod.decideEach(List.of(req + "\0", req)).toList();
            assertEquals(2, each.size());
            assertFalse(each.get(0).isOk());
            assertEquals(Status.INVALID_ARGUMENT, each.get(0).error().get().status());
            assertTrue(each.get(1).isOk());
        }
    }

    @Test
    void intParameterOfNullIsANullPointerException() {
        try (Model mod = Model.open(model())) {
            assertThrows(NullPointerException.class, () -> mod.intParameter(null));
        }
    }
}
