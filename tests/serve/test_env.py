#!/usr/bin/env python3
"""`skycmd serve` configured by environment, as containers are: every option of
`skycmd serve --help` has a variable SKYCMD_ + its long name upper-cased, '-' as '_', and
each variable, set alone, changes what `--print-config` prints (the table below covers every
option --help lists: a new option without its row fails here). The command line wins over
the environment, also over the variables of the options it excludes; a flag's variable that
is not a boolean is a usage error (exit 2). Live servers configured by environment only:
SKYCMD_MODEL with two models (GET /v1/models lists both), SKYCMD_API_KEY (401 without it),
SKYCMD_MAX_QUESTIONS (413 naming it), SKYCMD_CORS_ORIGIN (the header).

usage: test_env.py --cli build/skycmd [--work-dir DIR]
"""

import json
import os
import re
import subprocess

from serve_common import (Server, check, ensure_model, eq, main_guard, parse_args, request, run_tests, test)

ARGS = parse_args(__doc__)

# option -> (its variables, the --print-config key, the value printed); --no-calib alone is
# plain Q8_0 weights, as in decide and bench.
KEY_FILE = os.path.join(ARGS.work_dir, "key.txt")
ROWS = {
    "--model": ({"SKYCMD_MODEL": "a=/m/a.gguf,/m/b.gguf"}, "models",
                [{"name": "a", "path": "/m/a.gguf"}, {"name": None, "path": "/m/b.gguf"}]),
    "--int8": ({"SKYCMD_INT8": "1"}, "weights", "q8-row"),
    "--q8": ({"SKYCMD_Q8": "yes"}, "weights", "q8"),
    "--no-calib": ({"SKYCMD_NO_CALIB": "true"}, "weights", "q8-plain"),
    "--q8-fast": ({"SKYCMD_Q8_FAST": "on"}, "activations", 1),
    "--q8-row": ({"SKYCMD_Q8_ROW": "1"}, "weights", "q8-row"),
    "--bf16x3": ({"SKYCMD_BF16X3": "1", "SKYCMD_F32": "0"}, "weights", "bf16x3"),
    "--f32": ({"SKYCMD_F32": "1"}, "weights", "f32"),
    "--max-tokens": ({"SKYCMD_MAX_TOKENS": "300"}, "max_tokens", 300),
    "--host": ({"SKYCMD_HOST": "127.0.0.2"}, "host", "127.0.0.2"),
    "--port": ({"SKYCMD_PORT": "9123"}, "port", 9123),
    "--api-key": ({"SKYCMD_API_KEY": "k"}, "api_key", "set"),
    "--api-key-file": ({"SKYCMD_API_KEY_FILE": KEY_FILE}, "api_key", "set"),
    "--max-connections": ({"SKYCMD_MAX_CONNECTIONS": "77"}, "max_connections", 77),
    "--max-connections-per-ip": ({"SKYCMD_MAX_CONNECTIONS_PER_IP": "5"}, "max_connections_per_ip", 5),
    "--timeout": ({"SKYCMD_TIMEOUT": "12"}, "timeout", 12),
    "--header-timeout": ({"SKYCMD_HEADER_TIMEOUT": "3"}, "header_timeout", 3),
    "--body-timeout": ({"SKYCMD_BODY_TIMEOUT": "4"}, "body_timeout", 4),
    "--drain-timeout": ({"SKYCMD_DRAIN_TIMEOUT": "6"}, "drain_timeout", 6),
    "--cors-origin": ({"SKYCMD_CORS_ORIGIN": "https://example.org"}, "cors_origin", "https://example.org"),
    "--max-body": ({"SKYCMD_MAX_BODY": "1m"}, "max_body", 1 << 20),
    "--max-questions": ({"SKYCMD_MAX_QUESTIONS": "9"}, "max_questions", 9),
    "--queue": ({"SKYCMD_QUEUE": "17"}, "queue", 17),
    "--max-buffered": ({"SKYCMD_MAX_BUFFERED": "3m"}, "max_buffered", 3 << 20),
    "--batch-max": ({"SKYCMD_BATCH_MAX": "3"}, "batch_max", 3),
    "--batch-window-us": ({"SKYCMD_BATCH_WINDOW_US": "250"}, "batch_window_us", 250),
    "--inline-max-us": ({"SKYCMD_INLINE_MAX_US": "0"}, "inline_max_us", 0),
    "--tournament-group": ({"SKYCMD_TOURNAMENT_GROUP": "8"}, "tournament_group", 8),
    "--auto-tournament-group": ({"SKYCMD_AUTO_TOURNAMENT_GROUP": "0"}, "auto_tournament_group", 0),
    "--max-token-budget": ({"SKYCMD_MAX_TOKEN_BUDGET": "1024"}, "max_token_budget", 1024),
    "--max-batch-tokens": ({"SKYCMD_MAX_BATCH_TOKENS": "4096"}, "max_batch_tokens", 4096),
    "--threads": ({"SKYCMD_THREADS": "3"}, "threads", 3),
    "--compute-threads": ({"SKYCMD_COMPUTE_THREADS": "2"}, "compute_threads", 2),
    "--poll-us": ({"SKYCMD_POLL_US": "100"}, "poll_us", 100),
    "--access-log": ({"SKYCMD_ACCESS_LOG": "1"}, "access_log", True),
    "--log-format": ({"SKYCMD_LOG_FORMAT": "json"}, "log_format", "json"),
    "--verbose": ({"SKYCMD_VERBOSE": "1"}, "verbose", True),
}
# not configuration: --print-config is read from SKYCMD_PRINT_CONFIG as well (below)
NOT_CONFIG = {"--print-config", "--help"}


def clean_env(extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKYCMD_")}
    env.update(extra or {})
    return env


def print_config(env, *args):
    p = subprocess.run([ARGS.cli, "serve", "--print-config", *args], capture_output=True, text=True,
                       env=clean_env(env), timeout=60)
    check(p.returncode == 0, f"serve --print-config {' '.join(args)} with {env}: exit {p.returncode}: {p.stderr}")
    return json.loads(p.stdout)


def help_options():
    p = subprocess.run([ARGS.cli, "serve", "--help"], capture_output=True, text=True, timeout=60)
    eq(p.returncode, 0, "serve --help")
    return set(re.findall(r"(?m)^\s+(?:-\w, )?(--[a-z0-9][a-z0-9-]*)", p.stdout)), p.stdout


@test
def every_option_has_a_tested_variable():
    opts, text = help_options()
    eq(sorted(opts - NOT_CONFIG - set(ROWS)), [], "options of --help without a row in this test")
    eq(sorted(set(ROWS) - opts), [], "rows for options --help does not list")
    check("SKYCMD_" in text and "environment" in text, "--help explains the variables")


@test
def each_variable_changes_the_configuration():
    with open(KEY_FILE, "w") as f:
        f.write("from-a-file\n")
    base = print_config({})
    for opt, (env, key, want) in ROWS.items():
        got = print_config(env)
        eq(got[key], want, f"{opt} from {env}: {key}")
        # the default weights mode (bf16x3 on a CPU with AMX-BF16 tiles, else f32): setting
        # it changes nothing
        if not (key == "weights" and opt in ("--bf16x3", "--f32") and want == base[key]):
            check(got[key] != base[key], f"{opt}: {key} is the default {base[key]!r} with {env} set too")


@test
def command_line_wins():
    got = print_config({"SKYCMD_PORT": "9123", "SKYCMD_THREADS": "3"}, "--port", "9200")
    eq((got["port"], got["threads"]), (9200, 3), "--port over SKYCMD_PORT, SKYCMD_THREADS kept")
    got = print_config({"SKYCMD_MODEL": "a=/m/a.gguf,/m/b.gguf"}, "--model", "/m/c.gguf")
    eq(got["models"], [{"name": None, "path": "/m/c.gguf"}], "--model replaces SKYCMD_MODEL's list")
    # a flag excludes the variables of the options it cannot go with
    eq(print_config({"SKYCMD_Q8_ROW": "1"}, "--f32")["weights"], "f32", "--f32 over SKYCMD_Q8_ROW")
    eq(print_config({"SKYCMD_API_KEY": "k"}, "--api-key-file", KEY_FILE)["api_key"], "set",
       "--api-key-file over SKYCMD_API_KEY")
    # an empty variable is unset
    eq(print_config({"SKYCMD_PORT": "", "SKYCMD_API_KEY": ""})["port"], 8080, "SKYCMD_PORT= is unset")
    eq(print_config({"SKYCMD_API_KEY": ""})["api_key"], None, "SKYCMD_API_KEY= is no key")


@test
def bad_variables_are_usage_errors():
    # a bad value names the variable it came from, the option it sets and what it takes
    for env, what in (({"SKYCMD_VERBOSE": "maybe"}, "SKYCMD_VERBOSE"),
                      ({"SKYCMD_PORT": "http"}, "SKYCMD_PORT=http: invalid value for --port, which takes an integer in [0, 65535]"),
                      ({"SKYCMD_THREADS": "-3"}, "SKYCMD_THREADS=-3: invalid value for --threads"),
                      ({"SKYCMD_Q8": "1", "SKYCMD_F32": "1"}, "--f32 excludes")):
        p = subprocess.run([ARGS.cli, "serve", "--print-config"], capture_output=True, text=True,
                           env=clean_env(env), timeout=60)
        eq(p.returncode, 2, f"exit status with {env}")
        check(what in p.stderr, f"{env}: stderr {p.stderr!r} does not name {what!r}")
    p = subprocess.run([ARGS.cli, "serve"], capture_output=True, text=True,
                       env=clean_env({"SKYCMD_PRINT_CONFIG": "1"}), timeout=60)
    check(p.returncode == 0 and json.loads(p.stdout)["port"] == 8080, "SKYCMD_PRINT_CONFIG=1 prints")


def env_server(env):
    """A server whose whole configuration (models included) comes from the environment."""
    return Server(ARGS, [], models=[], env=dict(clean_env(), **env))


@test
def live_server_from_environment():
    model = ensure_model(ARGS)
    srv = env_server({"SKYCMD_MODEL": f"first={model},second={model}", "SKYCMD_API_KEY": "env-key",
                      "SKYCMD_MAX_QUESTIONS": "1", "SKYCMD_CORS_ORIGIN": "https://app.example"})
    try:
        auth = {"Authorization": "Bearer env-key"}
        st, h, body = request(srv.port, "GET", "/v1/models", headers=auth)
        eq(st, 200, "GET /v1/models with the key")
        eq([m["id"] for m in json.loads(body)["data"]], ["first", "second"], "models from SKYCMD_MODEL")
        st, h, body = request(srv.port, "GET", "/v1/models")
        eq(st, 401, "GET /v1/models without SKYCMD_API_KEY's key")
        two = {"state": "vy 0", "questions": {"a": {"type": "noul", "instructions": "?"},
                                              "b": {"type": "noul", "instructions": "!"}}}
        st, h, body = request(srv.port, "POST", "/v1/systemone", two, headers=auth)
        eq(st, 413, "two questions over SKYCMD_MAX_QUESTIONS=1")
        check("at most 1 per request" in json.loads(body)["error"]["message"], f"413 names the limit: {body!r}")
        check(h.get("access-control-allow-origin") == "https://app.example", f"CORS header: {h}")
    finally:
        eq(srv.stop(), 0, "server exit status")


if __name__ == "__main__":
    main_guard(lambda: run_tests(ARGS))
