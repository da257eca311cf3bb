# Homebrew formula for skycmd (libskycmd + the skycmd CLI and server).
# Lives in a tap (homebrew-tap/Formula/skycmd.rb); check with `brew audit --strict --new skycmd`
# and `brew test skycmd`. Homebrew itself cannot be installed on this project's CI machines
# (no download source for it), so CI runs `ruby -c` on this file, packaging/test-release.sh
# runs the commands of `install` and `test do` below on the release tarball, in a prefix
# that is then moved (as a bottle is poured elsewhere), with only the dependencies declared here
# (pkg-config sees cjson, libmicrohttpd and utf8proc, not Criterion), and tools/macos-cross.sh
# compiles and links the same sources for arm64 and x86-64 macOS. A real `brew install
# --build-from-source` on a Mac has not run yet (docs/platforms.md).
# url and sha256 are written by tools/release-tarball.sh (run it at the release commit).
# Homebrew copies LICENSE and CHANGELOG.md into the keg by itself.
class Skycmd < Formula
  desc "Run System One decision models (ModernBERT + Laya head) from GGUF files"
  homepage "https://example.invalid/skycmd"
  url "https://example.invalid/skycmd/releases/download/v0.1.0/skycmd-0.1.0.tar.gz"
  sha256 "d6a905cb3ec9b110d60b8c72db6028441e377da8f6b0f66aeffdb5246f431115"
  license "MIT"
  head "https://example.invalid/skycmd.git", branch: "main"

  depends_on "cmake" => :build
  depends_on "pkgconf" => [:build, :test]
  depends_on "cjson"
  depends_on "libmicrohttpd"
  depends_on "utf8proc"
  depends_on "zstd" # skycmd serve decodes zstd and gzip/deflate request bodies

  uses_from_macos "zlib"

  def install
    system "cmake", "-S", ".", "-B", "build", "-DBUILD_TESTING=OFF", *std_cmake_args
    system "cmake", "--build", "build"
    system "cmake", "--install", "build"
  end

  test do
    # The library: a consumer built with pkg-config refuses nothing and reports its version.
    (testpath/"consumer.c").write <<~C
      #include <stdio.h>
      #include <skycmd.h>
      int main(void) {
        skycmd_error *err = skycmd_error_new();
        if (skycmd_check_version(SKYCMD_VERSION_NUMBER, err) != SKYCMD_OK) {
          fprintf(stderr, "%s\\n", skycmd_error_message(err));
          return 1;
        }
        printf("%s\\n", skycmd_version_string());
        skycmd_error_free(err);
        return 0;
      }
    C
    pkgconf_flags = shell_output("pkgconf --cflags --libs skycmd").chomp.split
    system ENV.cc, "consumer.c", "-o", "consumer", *pkgconf_flags
    assert_equal version.to_s, shell_output("./consumer").chomp

    # The CLI: a random model answers a request.
    system bin/"skycmd", "random", "s1-pico", testpath/"pico.gguf"
    assert_match "GGUF v3", shell_output("#{bin}/skycmd inspect #{testpath}/pico.gguf")
    (testpath/"request.json").write <<~JSON
      {"state": "vy 0 dx 36 up 9 dn 7",
       "questions": {"action": {"type": "choice", "instructions": "Which input?",
                                "criteria": {"thrust": "go up", "glide": "go down"}}}}
    JSON
    output = shell_output("#{bin}/skycmd decide #{testpath}/pico.gguf #{testpath}/request.json")
    assert_match "\"answers\"", output
    assert_match "\"action\"", output
    assert_match version.to_s, shell_output("#{bin}/skycmd --version")
  end
end
