package org.skycmd;

import java.io.IOException;
import java.io.InputStream;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;

/**
 * Loads the JNI library (libskycmd_jni.so; libskycmd_jni.dylib on macOS) once, before the
 * first native call. It is self-contained: libskycmd, cJSON and utf8proc are linked into it
 * statically, so nothing else is loaded and no system copy of those libraries is needed.
 *
 * <p>Order: the system property {@code skycmd.jni.path} (a file); then the resource
 * {@code /native/<os>-<arch>/<library>} on the class path ({@code linux-<arch>/libskycmd_jni.so}
 * or {@code darwin-<arch>/libskycmd_jni.dylib}, arch as {@code uname -m} names it on Linux:
 * x86_64, aarch64, ...; build-native.sh writes it), loaded in place when it is
 * a plain file (a build tree's {@code target/classes}) or extracted to a private temporary
 * directory when it sits in a jar; last, {@code System.loadLibrary("skycmd_jni")} through
 * {@code java.library.path}.
 */
public final class NativeLoader {
    /** The file name of the library: libskycmd_jni.so, or libskycmd_jni.dylib on macOS. */
    static final String FILE = System.mapLibraryName("skycmd_jni");
    static final String RESOURCE = "/native/" + os() + "-" + machine() + "/" + FILE;
    private static boolean loaded;

    private NativeLoader() {}

    /** linux, or darwin on macOS (the JVM's os.name says "Mac OS X"). */
    static String os() {
        String name = System.getProperty("os.name", "").toLowerCase(java.util.Locale.ROOT);
        if (name.startsWith("mac") || name.startsWith("darwin")) return "darwin";
        return "linux";
    }

    /** The machine name as uname -m gives it on Linux (the JVM's os.arch says amd64 for x86_64). */
    static String machine() {
        String arch = System.getProperty("os.arch", "");
        switch (arch) {
            case "amd64": case "x86-64": return "x86_64";
            case "arm64": return "aarch64";
            default: return arch;
        }
    }

    /** Loads the library; safe to call many times. Throws UnsatisfiedLinkError on failure. */
    public static synchronized void load() {
        if (loaded) return;
        String explicit = System.getProperty("skycmd.jni.path");
        if (explicit != null && !explicit.isEmpty()) {
            System.load(Paths.get(explicit).toAbsolutePath().toString());
        } else {
            URL url = NativeLoader.class.getResource(RESOURCE);
            if (url == null) {
                System.loadLibrary("skycmd_jni");
            } else if ("file".equals(url.getProtocol())) {
                try {
                    System.load(Paths.get(url.toURI()).toString());
                } catch (URISyntaxException e) {
                    throw linkError("bad native path " + url, e);
                }
            } else {
                try {
                    System.load(extract(NativeLoader.class).toString());
                } catch (IOException e) {
                    throw linkError("cannot extract the native library from " + url, e);
                }
            }
        }
        loaded = true;
    }

    /**
     * Copies the JNI library of {@code anchor}'s class path entry into a new temporary
     * directory (both deleted at exit) and returns the copied file.
     */
    static Path extract(Class<?> anchor) throws IOException {
        Path dir = Files.createTempDirectory("skycmd-jni-");
        dir.toFile().deleteOnExit();
        Path out = dir.resolve(FILE);
        try (InputStream in = anchor.getResourceAsStream(RESOURCE)) {
            if (in == null) throw new IOException("no " + RESOURCE + " resource");
            Files.copy(in, out, StandardCopyOption.REPLACE_EXISTING);
        }
        out.toFile().deleteOnExit();
        return out;
    }

    private static UnsatisfiedLinkError linkError(String msg, Exception cause) {
        UnsatisfiedLinkError e = new UnsatisfiedLinkError(msg + ": " + cause.getMessage());
        e.initCause(cause);
        return e;
    }
}
