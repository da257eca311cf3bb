"""Builds skycmd._skycmd against the libskycmd that `pkg-config skycmd` finds.

Link mode (env SKYCMD_PYTHON_LINK):
  static (default when <libdir>/libskycmd.a exists): libskycmd.a is linked into the extension
      together with static cJSON and utf8proc, so the wheel needs no libskycmd, libcjson or
      libutf8proc and no LD_LIBRARY_PATH at run time (only libc and libm). The static cJSON
      and utf8proc are OUTDIR/lib/libcjson.a and libutf8proc.a of tools/build-static-deps.sh
      (Debian's sources, fetched without root): OUTDIR is $SKYCMD_STATIC_DEPS_DIR when set
      (an OUTDIR built beforehand: used as it is), else bindings/python/build-deps, made by
      running the script of this checkout. SKYCMD_PYTHON_DEPS=system links the system's
      shared libcjson and libutf8proc instead (`pkg-config --static --libs skycmd`);
  shared: -lskycmd, found at run time by the loader (LD_LIBRARY_PATH for a prefix install).
The extension exports PyInit__skycmd only (src/exports.map), so libskycmd's symbols linked
into it never interpose on another copy of the library in the same process.
"""
import atexit
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))


def pkg_config(*args):
    try:
        out = subprocess.run(["pkg-config", *args, "skycmd"], check=True,
                             capture_output=True, text=True).stdout
    except FileNotFoundError:
        sys.exit("skycmd: pkg-config is not installed (Debian: apt-get install pkg-config)")
    except subprocess.CalledProcessError as e:
        sys.exit("skycmd: `pkg-config %s skycmd` failed: %s\n"
                 "Install libskycmd-dev, or set PKG_CONFIG_PATH=<prefix>/lib/pkgconfig."
                 % (" ".join(args), e.stderr.strip()))
    return shlex.split(out)


def link_arguments():
    libdir = pkg_config("--variable=libdir")
    archive = os.path.join(libdir[0], "libskycmd.a") if libdir else ""
    mode = os.environ.get("SKYCMD_PYTHON_LINK") or ("static" if os.path.isfile(archive) else "shared")
    if mode == "static":
        if not os.path.isfile(archive):
            sys.exit("skycmd: SKYCMD_PYTHON_LINK=static but %r does not exist" % archive)
        rest = [a for a in pkg_config("--static", "--libs") if a != "-lskycmd"]
        print("skycmd: linking %s statically" % archive)
        if os.environ.get("SKYCMD_PYTHON_DEPS", "static") == "system":
            print("skycmd: SKYCMD_PYTHON_DEPS=system: the system's shared libcjson and libutf8proc")
            return [archive], rest
        deps = static_deps()
        # libskycmd.a first: the linker takes from the archives after it what it needs.
        return [archive] + deps, [a for a in rest if a not in ("-lcjson", "-lutf8proc")]
    if mode != "shared":
        sys.exit("skycmd: SKYCMD_PYTHON_LINK must be static or shared, not %r" % mode)
    print("skycmd: linking libskycmd as a shared library")
    return [], pkg_config("--libs")


def static_deps():
    """The archives of static cJSON and utf8proc (see the module's docstring)."""
    given = os.environ.get("SKYCMD_STATIC_DEPS_DIR")
    if os.environ.get("SKYCMD_PYTHON_DEPS", "static") != "static":
        sys.exit("skycmd: SKYCMD_PYTHON_DEPS must be static or system, not %r"
                 % os.environ["SKYCMD_PYTHON_DEPS"])
    if given:
        out = given
    else:
        script = os.path.join(HERE, "..", "..", "tools", "build-static-deps.sh")
        if not os.path.isfile(script):
            sys.exit("skycmd: no tools/build-static-deps.sh beside this source (not a libskycmd "
                     "checkout): set SKYCMD_STATIC_DEPS_DIR to a directory it made, or "
                     "SKYCMD_PYTHON_DEPS=system to link the system's libcjson and libutf8proc")
        out = os.path.join(HERE, "build-deps")
        print("skycmd: static cJSON and utf8proc: tools/build-static-deps.sh %s" % out)
        # its log on stderr (pip shows the build output with -v, or when it fails)
        if subprocess.run(["bash", script, out], stdout=sys.stderr).returncode != 0:
            sys.exit("skycmd: tools/build-static-deps.sh failed (it fetches Debian's cJSON and "
                     "utf8proc sources; offline, set SKYCMD_DEPS_SOURCE_DIR or "
                     "SKYCMD_STATIC_DEPS_DIR, see the script)")
    archives = [os.path.join(out, "lib", name) for name in ("libcjson.a", "libutf8proc.a")]
    for a in archives:
        if not os.path.isfile(a):
            sys.exit("skycmd: %r does not exist (tools/build-static-deps.sh OUTDIR makes it)" % a)
    print("skycmd: linking %s statically" % " and ".join(archives))
    return archives


def export_only_init():
    """Linker flags that keep PyInit__skycmd the extension's only export (libskycmd linked
    into it stays private): a GNU version script, or Mach-O's exported-symbol option."""
    if sys.platform == "darwin":
        return ["-Wl,-exported_symbol,_PyInit__skycmd"]
    return ["-Wl,--version-script=" + os.path.join(HERE, "src", "exports.map")]


objects, libs = link_arguments()
extension = Extension(
    "skycmd._skycmd",
    sources=["src/_skycmd.c"],
    depends=["src/exports.map"],
    extra_compile_args=pkg_config("--cflags") + ["-std=c11", "-Wall", "-Wextra", "-Werror"],
    extra_objects=objects,
    # -S: no debug sections in the wheel (the release build of libskycmd.a carries them).
    extra_link_args=libs + export_only_init() + ["-Wl,-S"],
)
# A fresh build directory outside the source tree for every build: pip builds in the source
# directory, and an object file left there from another libskycmd must never be reused.
build_base = tempfile.mkdtemp(prefix="skycmd-python-build.")
atexit.register(shutil.rmtree, build_base, True)
setup(ext_modules=[extension],
      options={"build": {"build_base": build_base}, "egg_info": {"egg_base": build_base}})
