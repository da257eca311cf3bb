#!/usr/bin/env python3
"""int8_memory.py - memory and load cost of the weights modes, side by side, one process each.

For each mode (f32, --q8, --q8-fast, --q8-row; a Q8_0 file as its own entry) a fresh Python
process opens the model through libskycmd (ctypes, the public API), answers one request
(examples/support-ticket.json) and reports, from /proc/self/status and getrusage:
  load wall / CPU seconds (and of each info line the library logs during the open), VmRSS after the load, VmRSS after one decide, VmHWM (peak),
  the decide's wall and CPU ms (medians of --decides, after one warm-up; one compute thread
  by default, so CPU ms is the comparable figure on a shared machine) and the progress callback's
  calls during the open (count, last done/total).
Linux only (/proc). The modes run one after another in the same minute, in the order given.

  python3 bench/int8_memory.py --lib build-h4/libskycmd.so --model base-f32.gguf \
      --q8-file base-q8.gguf [--modes f32,q8,q8-fast,q8-row] [--threads 1] [--json]
"""
import argparse
import ctypes
import json
import os
import resource
import subprocess
import sys
import time

OPT_THREADS, OPT_WEIGHTS, OPT_ACTIVATIONS = 1, 2, 3
WEIGHTS = {"f32": 0, "q8": 1, "q8-fast": 1, "q8-plain": 2, "q8-row": 4, "q8-file": 1}
PROGRESS_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint64)
LOG_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p)


def status_kb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return -1


def largest_mappings(n=8):
    """The n mappings of this process with the most resident memory (/proc/self/smaps):
    [rss_kb, size_kb, name], name "[anon]" for anonymous memory (the C heap's large blocks)."""
    maps, cur = [], None
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()
            if "-" in head[0] and not head[0].endswith(":"):
                cur = [0, 0, head[5] if len(head) > 5 else "[anon]"]
                maps.append(cur)
            elif head[0] == "Rss:":
                cur[0] = int(head[1])
            elif head[0] == "Size:":
                cur[1] = int(head[1])
    return sorted(maps, reverse=True)[:n]


def cpu_s():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def child(args):
    lib = ctypes.CDLL(args.lib)
    lib.skycmd_options_new.restype = ctypes.c_void_p
    lib.skycmd_error_new.restype = ctypes.c_void_p
    lib.skycmd_error_message.restype = ctypes.c_char_p
    lib.skycmd_error_message.argtypes = [ctypes.c_void_p]
    lib.skycmd_options_set_int.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int64]
    lib.skycmd_options_set_progress.argtypes = [ctypes.c_void_p, PROGRESS_FN, ctypes.c_void_p]
    lib.skycmd_model_open.argtypes = [ctypes.c_char_p, ctypes.c_void_p,
                                      ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
    lib.skycmd_session_new.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.skycmd_session_set_int.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int64]
    lib.skycmd_decide_json.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t,
                                       ctypes.POINTER(ctypes.c_char_p)]
    lib.skycmd_session_errmsg.restype = ctypes.c_char_p
    lib.skycmd_session_errmsg.argtypes = [ctypes.c_void_p]
    opts, err = lib.skycmd_options_new(), lib.skycmd_error_new()
    mode = args.child
    lib.skycmd_options_set_int(opts, OPT_WEIGHTS, WEIGHTS[mode])
    if mode == "q8-fast":
        lib.skycmd_options_set_int(opts, OPT_ACTIVATIONS, 1)
    lib.skycmd_options_set_int(opts, OPT_THREADS, args.threads)
    calls = {"n": 0, "done": 0, "total": 0, "monotonic": True}

    def on_progress(_ud, done, total):
        if done < calls["done"]:
            calls["monotonic"] = False
        calls["n"] += 1
        calls["done"], calls["total"] = done, total
        return 0

    cb = PROGRESS_FN(on_progress)
    lib.skycmd_options_set_progress(opts, cb, None)
    # the library's info lines during the open, with their time since the open began (where
    # the load's time goes: reading, packing, calibration, quantization)
    steps = []
    t_open = [time.monotonic(), cpu_s()]

    def on_log(_ud, level, msg):
        text = msg.decode(errors="replace")
        # info lines, and the matrices the sensitivity probe keeps in f32 (--q8's RSS)
        if level >= 1 or "kept in f32" in text:
            steps.append([round(time.monotonic() - t_open[0], 3), round(cpu_s() - t_open[1], 3),
                          text[:400]])

    log_cb = LOG_FN(on_log)
    lib.skycmd_options_set_log.argtypes = [ctypes.c_void_p, LOG_FN, ctypes.c_void_p]
    lib.skycmd_options_set_log(opts, log_cb, None)
    path = args.q8_file if mode == "q8-file" else args.model
    rss0 = status_kb("VmRSS")
    model = ctypes.c_void_p()
    w0, c0 = time.monotonic(), cpu_s()
    t_open[0], t_open[1] = w0, c0
    st = lib.skycmd_model_open(path.encode(), opts, ctypes.byref(model), err)
    load_wall, load_cpu = time.monotonic() - w0, cpu_s() - c0
    if st:
        sys.exit("open failed: %s" % lib.skycmd_error_message(err).decode())
    rss_load = status_kb("VmRSS")
    hwm_load = status_kb("VmHWM")
    rss_trim = -1
    maps = largest_mappings() if args.maps else []
    if args.trim:  # what the C heap holds freed but not given back (glibc malloc_trim)
        ctypes.CDLL(None).malloc_trim(0)
        rss_trim = status_kb("VmRSS")
    sess = ctypes.c_void_p()
    if lib.skycmd_session_new(model, ctypes.byref(sess)):
        sys.exit("session failed")
    lib.skycmd_session_set_int(sess, OPT_THREADS, args.threads)
    req = open(args.request, "rb").read()
    times, cpu_times = [], []
    for i in range(args.decides + 1):
        out = ctypes.c_char_p()
        t0, c0 = time.monotonic(), cpu_s()
        if lib.skycmd_decide_json(sess, req, len(req), ctypes.byref(out)):
            sys.exit("decide failed: %s" % lib.skycmd_session_errmsg(sess).decode())
        if i:
            times.append(1e3 * (time.monotonic() - t0))
            cpu_times.append(1e3 * (cpu_s() - c0))
        lib.skycmd_string_free(out)
    times.sort()
    cpu_times.sort()
    print(json.dumps({
        "mode": mode, "file_bytes": os.path.getsize(path), "load_wall_s": load_wall,
        "load_cpu_s": load_cpu, "rss_before_kb": rss0, "rss_after_load_kb": rss_load,
        "hwm_after_load_kb": hwm_load, "rss_after_trim_kb": rss_trim, "largest_mappings": maps, "rss_after_decide_kb": status_kb("VmRSS"),
        "hwm_kb": status_kb("VmHWM"), "decide_ms": times[len(times) // 2],
        "decide_cpu_ms": cpu_times[len(cpu_times) // 2],
        "progress_calls": calls["n"], "progress_last": [calls["done"], calls["total"]],
        "progress_monotonic": calls["monotonic"], "load_steps": steps}))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", required=True)
    ap.add_argument("--model", required=True, help="F32 or F16 GGUF")
    ap.add_argument("--q8-file", help="a Q8_0 GGUF of the same model (mode q8-file)")
    ap.add_argument("--modes", default="f32,q8-row,q8-fast,q8,q8-file")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--decides", type=int, default=3)
    ap.add_argument("--request", default=os.path.join(os.path.dirname(__file__), "..",
                                                      "examples", "support-ticket.json"))
    ap.add_argument("--json", action="store_true", help="one JSON line per mode")
    ap.add_argument("--maps", action="store_true",
                    help="report the mappings holding the most RSS after the load (smaps)")
    ap.add_argument("--trim", action="store_true",
                    help="after the load, call glibc's malloc_trim(0) and report VmRSS again")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args)
    rows = []
    for mode in args.modes.split(","):
        if mode == "q8-file" and not args.q8_file:
            print("int8_memory: q8-file skipped (no --q8-file)", file=sys.stderr)
            continue
        cmd = [sys.executable, __file__, "--child", mode] + [
            a for a in sys.argv[1:] if a != "--json"]
        out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
        rows.append(json.loads(out.strip().splitlines()[-1]))
        if args.json:
            print(json.dumps(rows[-1]), flush=True)
    if args.json:
        return
    mb = lambda kb: kb / 1024.0
    print("%-8s %8s %8s %9s %10s %10s %9s %9s %9s %9s" % (
        "mode", "load s", "CPU s", "RSS load", "RSS decide", "peak HWM", "HWM load",
        "decide ms", "CPU ms", "progress"))
    for r in rows:
        print("%-8s %8.2f %8.2f %8.0fM %9.0fM %9.0fM %8.0fM %9.1f %9.1f %9d" % (
            r["mode"], r["load_wall_s"], r["load_cpu_s"], mb(r["rss_after_load_kb"]),
            mb(r["rss_after_decide_kb"]), mb(r["hwm_kb"]), mb(r["hwm_after_load_kb"]),
            r["decide_ms"], r["decide_cpu_ms"], r["progress_calls"]))
    for r in rows:
        if r["rss_after_trim_kb"] >= 0:
            print("  %-8s VmRSS after malloc_trim(0): %.0fM" % (r["mode"], mb(r["rss_after_trim_kb"])))
    for r in rows:
        for t, c, msg in r["load_steps"]:
            print("  %-8s %7.2f s wall %7.2f s CPU  %s" % (r["mode"], t, c, msg))


if __name__ == "__main__":
    main()
