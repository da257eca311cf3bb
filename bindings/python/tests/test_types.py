"""The package's annotations, py.typed and the extension's stub, checked by mypy as a user's
project would see them (the installed wheel)."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def mypy(path, tmp_path):
    return subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental",
                           "--cache-dir", str(tmp_path / "mypy-cache"), path],
                          capture_output=True, text=True, cwd=str(tmp_path))


def test_typed_use_type_checks(tmp_path):
    r = mypy(os.path.join(HERE, "types_check.py"), tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Success: no issues found" in r.stdout


def test_wrong_use_is_refused(tmp_path):
    r = mypy(os.path.join(HERE, "types_wrong.py"), tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    errors = [line for line in r.stdout.splitlines() if ": error:" in line]
    assert [int(line.split(":")[1]) for line in errors] == [5, 6, 7, 8], r.stdout
