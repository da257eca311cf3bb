#!/usr/bin/env python3
"""Clients generated from the OpenAPI document work (issue 39): the document a live
`skycmd serve` serves at GET /openapi.json is fed to four pinned generators, and what they make
must cover every operation and talk to that server.

  openapi-python-client 0.29.1 (PyPI, in the CI venv)      --fail-on-warning; the package is
      imported and sends the document's example (examples/flappy-drone.json), a string, an
      object and a list state and a request using every opt-in answer field; each typed
      answer must equal the server's plain JSON answer (to_dict() == the JSON), its classes
      ChoiceAnswer/NoulAnswer/ScoreAnswer; a 422 parses as ValidationError
  openapi-generator 7.25.0 `-g python` (the CLI jar)     the same with its pydantic client
  openapi-generator 7.25.0 `-g typescript-fetch`         compiled by tsc --strict with
      openapi_clients/usage_typescript_fetch.ts, then run by node against the server: the
      example with a string, an object and a list state, answers equal to the plain ones
  openapi-typescript 7.13.0 (npm)                         compiled by tsc --strict with
      openapi_clients/usage_openapi_typescript.ts: requests whose state is a string, an object
      (which a `Record<string, never>` state refuses), a list, a number; a question of an
      unknown type must not compile

Both openapi-generator outputs come from one JVM (`batch` with two configs), and its log
(quieted by `batch` to errors only) is turned back up to warnings: any ERROR, or a WARN other
than the three known harmless ones, fails the test.

Where the tools come from: tools/setup.sh --all puts openapi-python-client (and what the
generated Python clients import) in the CI venv (tools/requirements-ci.txt), the jar in
.tools/openapi-generator/ and the npm packages in .tools/npm/ (tests/serve/openapi_clients/
package-lock.json); Java and Node from the system. Runs under serve_common.sdk_interpreter()
($SKYCMD_SERVE_SDK_PYTHON, else .venv-ci). Exit 77 (skipped, with the reason) when a tool is
missing, unless SKYCMD_REQUIRE_SDK=1, where that is a failure.

usage: test_openapi_clients.py --cli build/skycmd [--model m.gguf] [--work-dir DIR]
"""

import importlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time

import serve_common
serve_common.run_under_sdk_python()
from serve_common import (Failure, Server, check, eq, example_request, ensure_model, main_guard, parse_args,
                          request, run_tests, test)

OAG_VERSION = "7.25.0"
OPC_VERSION = "0.29.1"
HERE = os.path.dirname(os.path.abspath(__file__))
PINS_DIR = os.path.join(HERE, "openapi_clients")

ARGS = parse_args(__doc__)
TOOLS = os.path.join(os.path.abspath(ARGS.source_dir), ".tools")
WORK = os.path.abspath(ARGS.work_dir)

# The operations of the document (operationId -> path); each generator must make all of them.
OPERATIONS = {
    "systemOne": "/v1/systemone",
    "systemOneBatch": "/v1/systemone/batch",
    "listModelsAlias": "/models",
    "listModels": "/v1/models",
    "health": "/health",
    "healthV1": "/v1/health",
    "healthz": "/healthz",
    "metrics": "/metrics",
    "openapi": "/openapi.json",
}

# openapi-generator warnings that say nothing about the document's quality: its 3.1 support
# banner, an inline schema of a oneOf/anyOf it names itself, TypeScript's `Error` renamed.
OAG_HARMLESS_WARNINGS = (
    "OpenAPI 3.1 support is still in beta",
    "Failed to get the schema name: null",
    "Error (model name matches existing language type) cannot be used as a model name. Renamed to ModelError",
)


def missing(why):
    serve_common.tool_missing(why, "tools/setup.sh --all installs the generators")


def npm_pin(name):
    with open(os.path.join(PINS_DIR, "package.json")) as f:
        return json.load(f)["dependencies"][name]


def installed_npm_version(name):
    try:
        with open(os.path.join(TOOLS, "npm", "node_modules", name, "package.json")) as f:
            return json.load(f)["version"]
    except OSError:
        return None


def find_tools():
    t = {}
    for mod in ("httpx", "attrs", "dateutil", "pydantic", "urllib3", "typing_extensions"):
        try:
            importlib.import_module(mod)
        except ImportError as e:
            missing(f"{mod}, which the generated Python clients import, is not installed for {sys.executable} ({e})")
    t["opc"] = os.path.join(os.path.dirname(sys.executable), "openapi-python-client")
    if not os.path.exists(t["opc"]):
        t["opc"] = shutil.which("openapi-python-client")
    if not t["opc"]:
        missing(f"openapi-python-client is not installed beside {sys.executable}")
    t["jar"] = os.environ.get("SKYCMD_OPENAPI_GENERATOR_JAR") or os.path.join(
        TOOLS, "openapi-generator", f"openapi-generator-cli-{OAG_VERSION}.jar")
    if not os.path.exists(t["jar"]):
        missing(f"{t['jar']} (openapi-generator-cli {OAG_VERSION}) is missing")
    t["java"] = shutil.which("java")
    if not t["java"]:
        missing("java is not on PATH (openapi-generator needs Java >= 11)")
    t["node"] = shutil.which("node")
    if not t["node"]:
        missing("node is not on PATH")
    for name in ("openapi-typescript", "typescript"):
        have, want = installed_npm_version(name), npm_pin(name)
        if have != want:
            missing(f"{name} {want} is not installed in {TOOLS}/npm (found: {have})")
    bin_dir = os.path.join(TOOLS, "npm", "node_modules", ".bin")
    t["oats"] = os.path.join(bin_dir, "openapi-typescript")
    t["tsc"] = os.path.join(bin_dir, "tsc")
    return t


TOOL = find_tools()


def run_logged(name, cmd, **kw):
    """Start cmd with its output in WORK/<name>.log; returns (Popen, log path, start time)."""
    log = os.path.join(WORK, name + ".log")
    f = open(log, "w")
    p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, **kw)
    f.close()
    return p, log, time.time()


def finish(job, timeout=300):
    p, log, t0 = job
    try:
        p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    with open(log, errors="replace") as f:
        return p.returncode, f.read(), time.time() - t0


LOGBACK = """<configuration>
  <statusListener class="ch.qos.logback.core.status.NopStatusListener" />
  <appender name="OUT" class="ch.qos.logback.core.ConsoleAppender">
    <target>System.out</target>
    <encoder><pattern>[%thread] %-5level %logger{36} - %msg%n</pattern></encoder>
  </appender>
  <!-- `batch` sets ROOT, io.swagger and org.openapitools to ERROR; levels of their children
       stay as set here, so the generators' warnings come back -->
  <logger name="org.openapitools.codegen" level="WARN" />
  <logger name="io.swagger.v3" level="WARN" />
  <root level="WARN"><appender-ref ref="OUT" /></root>
</configuration>
"""


def setup():
    t0 = time.time()
    for d in ("python", "ts", "generate"):
        shutil.rmtree(os.path.join(WORK, d), ignore_errors=True)
        os.makedirs(os.path.join(WORK, d))
    ensure_model(ARGS)
    srv = Server(ARGS, ["--threads", "2"])
    url = f"http://127.0.0.1:{srv.port}"
    # what users generate from: the document the server serves
    st, _, served = request(srv.port, "GET", "/openapi.json")
    eq(st, 200, "GET /openapi.json")
    spec = os.path.join(WORK, "generate", "openapi.json")
    with open(spec, "wb") as f:
        f.write(served)

    gen = os.path.join(WORK, "generate")
    py_out = os.path.join(WORK, "python")
    ts_out = os.path.join(WORK, "ts")
    with open(os.path.join(gen, "logback.xml"), "w") as f:
        f.write(LOGBACK)
    configs = []
    for name, cfg in (("python", {"generatorName": "python", "outputDir": os.path.join(py_out, "ogen"),
                                  "additionalProperties": {"packageName": "skycmd_ogen",
                                                           "projectName": "skycmd-ogen"}}),
                      ("typescript-fetch", {"generatorName": "typescript-fetch",
                                            "outputDir": os.path.join(ts_out, "typescript-fetch")})):
        cfg["inputSpec"] = spec
        path = os.path.join(gen, f"oag-{name}.json")
        with open(path, "w") as f:
            json.dump(cfg, f)
        configs.append(path)
    with open(os.path.join(gen, "opc-config.json"), "w") as f:
        json.dump({"post_hooks": [], "package_name_override": "skycmd_opc"}, f)

    # the three generators at once (one JVM for both openapi-generator outputs)
    jobs = {
        "openapi-generator": run_logged("openapi-generator", [
            TOOL["java"], "-Xshare:auto", "-XX:TieredStopAtLevel=1",
            "-Dlogback.configurationFile=" + os.path.join(gen, "logback.xml"),
            "-jar", TOOL["jar"], "batch", "--fail-fast", "--threads", "2", *configs], cwd=gen),
        "openapi-python-client": run_logged("openapi-python-client", [
            TOOL["opc"], "generate", "--path", spec, "--output-path", os.path.join(py_out, "opc", "skycmd_opc"),
            "--meta", "none", "--fail-on-warning", "--config", os.path.join(gen, "opc-config.json")], cwd=gen),
        "openapi-typescript": run_logged("openapi-typescript", [
            TOOL["node"], TOOL["oats"], spec, "-o", os.path.join(ts_out, "openapi-typescript", "skycmd.ts")], cwd=gen),
    }
    ended = {}
    deadline = time.time() + 300
    while len(ended) < len(jobs) and time.time() < deadline:
        for name, (p, _, _) in jobs.items():
            if name not in ended and p.poll() is not None:
                ended[name] = time.time()
        time.sleep(0.02)
    results = {}
    for name, job in jobs.items():
        rc, out, _ = finish(job, timeout=1)
        results[name] = (rc, out, ended.get(name, time.time()) - job[2])
    for name, (rc, _, secs) in results.items():
        print(f"  {name}: exit {rc} in {secs:.1f} s", flush=True)

    # tsc in the background while the Python clients are tested
    tsc_job = None
    if results["openapi-generator"][0] == 0 and results["openapi-typescript"][0] == 0:
        for name in ("usage_openapi_typescript.ts", "usage_typescript_fetch.ts"):
            shutil.copy(os.path.join(PINS_DIR, name), ts_out)
        with open(os.path.join(ts_out, "tsconfig.json"), "w") as f:
            json.dump({"compilerOptions": {"strict": True, "target": "es2020", "module": "commonjs",
                                           "lib": ["es2020", "dom"], "types": [], "outDir": "out",
                                           "skipLibCheck": False},
                       "files": ["usage_openapi_typescript.ts", "usage_typescript_fetch.ts"]}, f)
        tsc_job = run_logged("tsc", [TOOL["node"], TOOL["tsc"], "-p", "tsconfig.json"], cwd=ts_out)
    print(f"  setup (server, generators) {time.time() - t0:.1f} s", flush=True)
    return {"srv": srv, "url": url, "port": srv.port, "spec": json.loads(served), "gen": results,
            "py_out": py_out, "ts_out": ts_out, "tsc": tsc_job, "tsc_result": None}


def teardown(ctx):
    if ctx["tsc"] and ctx["tsc_result"] is None:
        finish(ctx["tsc"])
    eq(ctx["srv"].stop(), 0, "server exit status")


# ---------------------------------------------------------------- helpers -----------

def example(ctx):
    return json.loads(example_request(ARGS))


def plain(ctx, body):
    """The server's answer to body sent as plain JSON."""
    st, _, data = request(ctx["port"], "POST", "/v1/systemone", body=body)
    eq(st, 200, f"plain POST status ({data[:300]!r})")
    return json.loads(data)


def with_states(req):
    """The example with a string, an object and a list state (same questions)."""
    return {
        "string": dict(req),
        "object": dict(req, state={"vy": 0, "dx": 36, "gaps": [9, 7], "next": {"alt": 32}}),
        "list": dict(req, state=["vy 0", 36, None, {"alt": 32}]),
    }


# every opt-in answer field: a tournament (x_tournament, eliminated options at 0), the gate
# (abstention, abstention_threshold, low_confidence), the truncation report, a noul without
# instructions, null descriptions, a list state
FEATURES = {
    "state": ["vy 0", {"dx": 36, "up": 9.5, "ok": True, "none": None}],
    "min_confidence": 0.99,
    "tournament_group": 2,
    "report_truncation": True,
    "questions": {
        "pick": {"type": "choice", "instructions": "Which gap?",
                 "criteria": {"a": "the first", "b": None, "c": "the third", "d": "", "e": "the fifth"}},
        "crash": {"type": "noul"},
        "room": {"type": "score", "instructions": "How much room?", "criteria": ["none", "tight", "comfortable"]},
    },
}


def check_typed_answers(where, answers, raw, classes):
    """answers: id -> typed answer; raw: the plain JSON response; classes: type -> class."""
    eq(list(answers), list(raw["answers"]), f"{where}: answer ids in request order")
    for qid, a in answers.items():
        want = raw["answers"][qid]
        cls = classes[want["type"]]
        check(isinstance(a, cls), f"{where}: answer {qid} is {type(a).__name__}, want {cls.__name__}")
        if want["type"] != "noul":
            probs = want["probabilities"]
            check(abs(math.fsum(probs.values()) - 1.0) < 1e-9, f"{where}: {qid} probabilities sum to 1")


def check_generated(ctx, name):
    rc, out, _ = ctx["gen"][name]
    eq(rc, 0, f"{name} exit status\n{out[-3000:]}")
    return out


def py_import(path, package):
    """Import a generated package from path (a fresh import every run)."""
    if path not in sys.path:
        sys.path.insert(0, path)
    for m in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
        del sys.modules[m]
    importlib.invalidate_caches()
    return importlib.import_module(package)


def snake(op):
    return re.sub(r"(?<!^)(?=[A-Z])", "_", op).lower()


# ---------------------------------------------------------------- the document ------

@test
def document_is_what_generators_need(ctx):
    doc = ctx["spec"]
    seen = {op["operationId"]: path for path, ops in doc["paths"].items() for op in ops.values()}
    eq(seen, OPERATIONS, "operations of the document")
    text = json.dumps(doc)
    check("/properties/" not in "".join(re.findall(r'"\$ref": "([^"]*)"', text)),
          "a $ref points into another schema's properties")

    def walk(node, where):
        if isinstance(node, dict):
            if "discriminator" in node:
                mapping = node["discriminator"].get("mapping")
                check(mapping, f"{where}: discriminator without mapping")
                eq(sorted(mapping.values()), sorted(r["$ref"] for r in node["oneOf"]), f"{where}: mapping")
            t = node.get("type")
            if isinstance(t, list) and len([x for x in t if x != "null"]) > 1:
                raise Failure(f"{where}: type {t} (generators need one type, or anyOf/oneOf)")
            if isinstance(t, list) and ("object" in t or "array" in t):
                raise Failure(f"{where}: type {t} (openapi-generator cannot make a nullable object/array of it)")
            for k, v in node.items():
                walk(v, f"{where}/{k}")
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, f"{where}/{i}")
    walk(doc, "#")
    ex = doc["paths"]["/v1/systemone"]["post"]["requestBody"]["content"]["application/json"]["example"]
    eq(ex, example(ctx), "the document's example is examples/flappy-drone.json")


# ---------------------------------------------------------------- generation --------

@test
def openapi_python_client_makes_every_operation(ctx):
    out = check_generated(ctx, "openapi-python-client")
    check("Warning" not in out and "Unable to" not in out, f"openapi-python-client warned:\n{out[-3000:]}")
    api = os.path.join(ctx["py_out"], "opc", "skycmd_opc", "api", "default")
    for op in OPERATIONS:
        path = os.path.join(api, snake(op) + ".py")
        check(os.path.exists(path), f"openapi-python-client dropped {op} ({path})")
        with open(path) as f:
            check("def sync_detailed(" in f.read(), f"{path}: no sync_detailed")


@test
def openapi_generator_makes_every_operation(ctx):
    out = check_generated(ctx, "openapi-generator")
    check("[SUCCESS] Batch generation finished 2 generators successfully" in out,
          f"openapi-generator batch did not finish both:\n{out[-3000:]}")
    bad = [line for line in out.splitlines()
           if (" ERROR " in line or " WARN " in line) and not any(w in line for w in OAG_HARMLESS_WARNINGS)]
    check(not bad, "openapi-generator errors or warnings:\n" + "\n".join(sorted(set(bad))[:30]))
    with open(os.path.join(ctx["py_out"], "ogen", "skycmd_ogen", "api", "default_api.py")) as f:
        py = f.read()
    with open(os.path.join(ctx["ts_out"], "typescript-fetch", "apis", "DefaultApi.ts")) as f:
        ts = f.read()
    for op in OPERATIONS:
        check(f"def {snake(op)}(" in py, f"openapi-generator python dropped {op}")
        check(f"async {op}(" in ts, f"openapi-generator typescript-fetch dropped {op}")


@test
def openapi_typescript_makes_every_operation(ctx):
    check_generated(ctx, "openapi-typescript")
    with open(os.path.join(ctx["ts_out"], "openapi-typescript", "skycmd.ts")) as f:
        ts = f.read()
    for op, path in OPERATIONS.items():
        check(f'"{path}": {{' in ts, f"openapi-typescript dropped {path}")
        check(re.search(rf"\b{op}: {{", ts), f"openapi-typescript has no operation {op}")
    # (its own empty `webhooks` and `$defs` are Record<string, never>, the document's types never)
    never = [line.strip() for line in ts.splitlines() if "Record<string, never>" in line
             and not re.match(r"export type (webhooks|\$defs) = ", line)]
    check(not never, "openapi-typescript made Record<string, never> (an object nothing fits): " + "; ".join(never))


# ---------------------------------------------------------------- openapi-python-client

@test
def openapi_python_client_answers_example(ctx):
    opc = py_import(os.path.join(ctx["py_out"], "opc"), "skycmd_opc")
    from skycmd_opc.api.default import health, list_models, system_one  # noqa: E402
    from skycmd_opc import models as m  # noqa: E402
    req = example(ctx)

    def typed_questions(questions):
        qs = m.SystemOneRequestQuestions()
        for qid, q in questions.items():
            if q["type"] == "choice":
                qs[qid] = m.ChoiceQuestion(type_=m.ChoiceQuestionType.CHOICE, instructions=q["instructions"],
                                           criteria=m.ChoiceQuestionCriteria.from_dict(q["criteria"]))
            elif q["type"] == "score":
                qs[qid] = m.ScoreQuestion(type_=m.ScoreQuestionType.SCORE, instructions=q["instructions"],
                                          criteria=q["criteria"])
            else:
                qs[qid] = m.NoulQuestion(type_=m.NoulQuestionType.NOUL, instructions=q["instructions"])
        return qs

    classes = {"choice": m.ChoiceAnswer, "score": m.ScoreAnswer, "noul": m.NoulAnswer}
    with opc.Client(base_url=ctx["url"], httpx_args={"trust_env": False}) as client:
        for name, body in with_states(req).items():
            state = body["state"]
            if isinstance(state, dict):
                state = m.StateType4.from_dict(state)
            typed = m.SystemOneRequest(state=state, questions=typed_questions(body["questions"]))
            eq(typed.to_dict(), body, f"{name} state: the typed request's JSON")
            r = system_one.sync_detailed(client=client, body=typed)
            raw = plain(ctx, body)
            eq(r.status_code, 200, f"{name} state: status ({r.content[:300]!r})")
            check(isinstance(r.parsed, m.SystemOneResponse), f"{name} state: parsed {type(r.parsed).__name__}")
            eq(json.loads(r.content), raw, f"{name} state: the answer (same as the plain request's)")
            eq(r.parsed.to_dict(), raw, f"{name} state: the typed answer's JSON")
            check_typed_answers(f"openapi-python-client, {name} state", r.parsed.answers.additional_properties,
                                raw, classes)
            action = r.parsed.answers["action"]
            eq(action.probabilities.additional_properties, raw["answers"]["action"]["probabilities"], "probabilities")
            check(action.choice in ("thrust", "glide"), "choice")
        # every opt-in answer field, through from_dict and back
        typed = m.SystemOneRequest.from_dict(FEATURES)
        eq(typed.to_dict(), FEATURES, "the opt-in request's JSON")
        r = system_one.sync_detailed(client=client, body=typed)
        raw = plain(ctx, FEATURES)
        eq(r.status_code, 200, f"opt-in request status ({r.content[:300]!r})")
        eq(r.parsed.to_dict(), raw, "the opt-in answer's JSON")
        pick = r.parsed.answers["pick"]
        check(isinstance(pick, m.ChoiceAnswer) and isinstance(pick.x_tournament, m.Tournament),
              "the tournament answer has x_tournament")
        eq(pick.low_confidence, True, "low_confidence")
        check(isinstance(pick.abstention, m.ChoiceAnswerAbstention), "abstention is the enum")
        # errors: a 422 parses as ValidationError, its loc starting with "body"
        bad = m.SystemOneRequest(state="x", questions=typed_questions(req["questions"]), model="no-such-model")
        r = system_one.sync_detailed(client=client, body=bad)
        eq(r.status_code, 422, "unknown model status")
        check(isinstance(r.parsed, m.ValidationError), f"422 parsed as {type(r.parsed).__name__}")
        eq(r.parsed.error.code, 422, "error.code")
        eq(r.parsed.detail[0].loc[0], "body", "detail[0].loc[0]")
        h = health.sync(client=client)
        check(isinstance(h, m.Health) and h.status == m.HealthStatus.OK, f"health: {h!r}")
        models = list_models.sync(client=client)
        check(isinstance(models, m.ModelList) and models.data and models.models, f"models: {models!r}")


# ---------------------------------------------------------------- openapi-generator python

@test
def openapi_generator_python_answers_example(ctx):
    ogen = py_import(os.path.join(ctx["py_out"], "ogen"), "skycmd_ogen")
    from skycmd_ogen import models as m  # noqa: E402
    req = example(ctx)

    def typed_questions(questions):
        qs = {}
        for qid, q in questions.items():
            if q["type"] == "choice":
                qs[qid] = m.Question(m.ChoiceQuestion(type="choice", instructions=q["instructions"],
                                                      criteria=q["criteria"]))
            elif q["type"] == "score":
                qs[qid] = m.Question(m.ScoreQuestion(type="score", instructions=q["instructions"],
                                                     criteria=q["criteria"]))
            else:
                qs[qid] = m.Question(m.NoulQuestion(type="noul", instructions=q["instructions"]))
        return qs

    classes = {"choice": m.ChoiceAnswer, "score": m.ScoreAnswer, "noul": m.NoulAnswer}
    with ogen.ApiClient(ogen.Configuration(host=ctx["url"])) as client:
        api = ogen.DefaultApi(client)
        for name, body in with_states(req).items():
            typed = m.SystemOneRequest(state=m.State(body["state"]), questions=typed_questions(body["questions"]))
            res = api.system_one_with_http_info(typed)
            raw = plain(ctx, body)
            eq(res.status_code, 200, f"{name} state: status")
            eq(json.loads(res.raw_data), raw, f"{name} state: the answer (same as the plain request's)")
            check(isinstance(res.data, m.SystemOneResponse), f"{name} state: parsed {type(res.data).__name__}")
            eq(res.data.to_dict(), raw, f"{name} state: the typed answer's JSON")
            answers = {k: v.actual_instance for k, v in res.data.answers.items()}
            check_typed_answers(f"openapi-generator python, {name} state", answers, raw, classes)
            eq(answers["action"].probabilities, raw["answers"]["action"]["probabilities"], "probabilities")
        # every opt-in answer field
        typed = m.SystemOneRequest.from_dict(FEATURES)
        res = api.system_one(typed)
        raw = plain(ctx, FEATURES)
        eq(res.to_dict(), raw, "the opt-in answer's JSON")
        pick = res.answers["pick"].actual_instance
        check(isinstance(pick, m.ChoiceAnswer) and isinstance(pick.x_tournament, m.Tournament),
              "the tournament answer has x_tournament")
        eq(pick.low_confidence, True, "low_confidence")
        # a 422: ApiException, its body a ValidationError
        try:
            api.system_one(m.SystemOneRequest(state=m.State("x"), questions=typed_questions(req["questions"]),
                                              model="no-such-model"))
            raise Failure("an unknown model was answered")
        except ogen.ApiException as e:
            eq(e.status, 422, "unknown model status")
            err = m.ValidationError.from_json(e.body)
            eq(err.error.code, 422, "error.code")
            eq(err.detail[0].loc[0].actual_instance, "body", "detail[0].loc[0]")
        eq(api.health().status, "ok", "health")
        models = api.list_models()
        check(models.data and models.models, f"models: {models!r}")


# ---------------------------------------------------------------- TypeScript ---------

def tsc_result(ctx):
    if ctx["tsc"] is None:
        raise Failure("no TypeScript to compile (a generator failed, see above)")
    if ctx["tsc_result"] is None:
        ctx["tsc_result"] = finish(ctx["tsc"])
        print(f"  tsc: exit {ctx['tsc_result'][0]} in {ctx['tsc_result'][2]:.1f} s", flush=True)
    return ctx["tsc_result"]


@test
def typescript_outputs_compile(ctx):
    rc, out, _ = tsc_result(ctx)
    eq(rc, 0, f"tsc --strict over both TypeScript outputs and their usage files\n{out[-4000:]}")


@test
def typescript_fetch_client_answers_example(ctx):
    rc, _, _ = tsc_result(ctx)
    check(rc == 0, "not compiled")
    js = os.path.join(ctx["ts_out"], "out", "usage_typescript_fetch.js")
    p = subprocess.run([TOOL["node"], js, ctx["url"]], capture_output=True, text=True, timeout=120)
    eq(p.returncode, 0, f"node {js}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    got = json.loads(p.stdout.strip().splitlines()[-1])
    for name, body in with_states(example(ctx)).items():
        raw = plain(ctx, body)
        g = got[name]
        eq(g["input_tokens"], raw["usage"]["input_tokens"], f"{name} state: input_tokens (the state was sent whole)")
        eq(g["model"], raw["model"], f"{name} state: model")
        for qid, want in raw["answers"].items():
            a = g["answers"][qid]
            eq(a["type"], want["type"], f"{name} state: {qid} type")
            for k in ("choice", "noul", "score", "probabilities", "confidence"):
                if k in want:
                    eq(a[k], want[k], f"{name} state: {qid}.{k}")
    eq(got["error"], 422, "an unknown model: ResponseError with status 422")
    eq(got["health"], "ok", "health")


if __name__ == "__main__":
    main_guard(lambda: run_tests(ARGS, setup, teardown))
