# binding.gyp - the Node-API addon of libskycmd, built on `npm install` (install.js runs
# node-gyp) from the committed SWIG wrapper src/skycmd_wrap.cxx (bindings/generate.sh makes
# it; SWIG is not needed here), against the libskycmd that `pkg-config skycmd` finds.
# No rpath is added: the addon finds libskycmd.so.1 through the normal loader path (the
# system library directory, or LD_LIBRARY_PATH for a prefix install).
{
  "targets": [
    {
      "target_name": "skycmd",
      "sources": ["src/skycmd_wrap.cxx"],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "defines": ["NAPI_VERSION=8"],
      # The wrapper and its async workers use C++ exceptions (node-addon-api's
      # NAPI_CPP_EXCEPTIONS mode); node-gyp turns them off by default.
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions"],
      "cflags_cc": ["-std=c++17", "-fno-strict-aliasing", "-Wno-unused-parameter",
                    "<!@(pkg-config --cflags skycmd)"],
      "libraries": ["<!@(pkg-config --libs skycmd)"]
    }
  ]
}
