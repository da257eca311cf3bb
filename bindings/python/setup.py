"""Builds skycmd._skycmd against the libskycmd that `pkg-config skycmd` finds.

Link mode (env SKYCMD_PYTHON_LINK):
  static (default when <libdir>/libskycmd.a exists): libskycmd.a is linked into the extension
      and only cJSON and utf8proc (from `pkg-config --static --libs skycmd`) stay shared
      system libraries, so the wheel needs no libskycmd and no LD_LIBRARY_PATH at run time;
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
        return [archive], rest
    if mode != "shared":
        sys.exit("skycmd: SKYCMD_PYTHON_LINK must be static or shared, not %r" % mode)
    print("skycmd: linking libskycmd as a shared library")
    return [], pkg_config("--libs")


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
