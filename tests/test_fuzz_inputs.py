"""Fuzzing every input: malformed and mutated workloads, traces, segment files and
command-line options give a workload or one clean error, never a traceback.

Strategies (tests/input_strategies.py; hypothesis, derandomized so CI sees the same
examples every run): mutated coflow, multi-stage, joint, moldable and msjo workloads, FB
traces, segment files, and command lines with bad option values.

Through the readers (many examples, fast), the command line in-process (the same
``main``), and for a small sample through the installed console script as a subprocess.
The property everywhere: success, or a :class:`~controller.model.WorkloadError` naming
the file / exit code 2 with one stderr line naming the file (or the bad option).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings

from controller.jobmodel import JobModelError
from controller.model import WorkloadError
from emulate.cli import main
from emulate.io.segments import read_segments
from emulate.io.traces import read_workload
from input_strategies import (BASES, POLICY, TRACE, cli_options, mutated_json,
                              mutated_segments, mutated_trace)

BIN = os.path.join(os.path.dirname(sys.executable), "coflowemu")
FUZZ = dict(derandomize=True, deadline=None, database=None,
            suppress_health_check=list(HealthCheck))


def _write(data: bytes, suffix: str) -> str:
    fd, path = tempfile.mkstemp(suffix=suffix, prefix="fuzz-")
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    return path


def _clean_reader_error(e: Exception, path: str):
    assert isinstance(e, (WorkloadError, JobModelError)), repr(e)
    assert path in str(e) and "\n" not in str(e), str(e)


# ---------------------------------------------------------------------------- readers
@settings(max_examples=400, **FUZZ)
@given(mutated_json())
def test_a_mutated_json_workload_reads_or_is_one_error_naming_the_file(sample):
    _, data = sample
    path = _write(data, ".json")
    try:
        read_workload(path)
    except Exception as e:      # noqa: BLE001 - the property: only clean errors
        _clean_reader_error(e, path)
    finally:
        os.unlink(path)


@settings(max_examples=300, **FUZZ)
@given(mutated_trace())
def test_a_mutated_fb_trace_reads_or_is_one_error_naming_file_and_line(data):
    path = _write(data, ".txt")
    try:
        read_workload(path)
    except Exception as e:      # noqa: BLE001
        _clean_reader_error(e, path)
        assert f"{path}:" in str(e)
    finally:
        os.unlink(path)


@settings(max_examples=200, **FUZZ)
@given(mutated_segments())
def test_a_mutated_segments_file_reads_or_is_one_error_naming_file_and_line(data):
    path = _write(data, ".jsonl")
    try:
        for s in read_segments(path):
            assert s["start"] <= s["end"]
    except Exception as e:      # noqa: BLE001
        _clean_reader_error(e, path)
    finally:
        os.unlink(path)


# ---------------------------------------------------------------------------- the CLI
def _one_clean_line(out, path: str | None):
    """exit 0, or exit 2 with one stderr line (naming ``path`` when given)."""
    assert out.exception is None or isinstance(out.exception, SystemExit), out.exc_info
    if out.exit_code == 0:
        return
    lines = out.stderr.strip().splitlines()
    assert out.exit_code == 2, (out.exit_code, out.stderr)
    assert len(lines) == 1 and lines[0].startswith("coflowemu: error: "), out.stderr
    if path is not None:
        assert path in lines[0], lines[0]


@settings(max_examples=60, **FUZZ)
@given(mutated_json())
def test_run_on_a_mutated_workload_succeeds_or_fails_cleanly(sample):
    kind, data = sample
    path = _write(data, ".json")
    try:
        out = CliRunner().invoke(main, ["run", path, "--policy", POLICY[kind], "--json",
                                        "--no-lp-bound"])
        _one_clean_line(out, path)
    finally:
        os.unlink(path)


@pytest.fixture(scope="module")
def cli_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("fuzz-cli")
    with open(d / "w.json", "w") as fh:
        json.dump(BASES["coflows"], fh)
    with open(d / "t.txt", "w") as fh:
        fh.write(TRACE)
    return {"{dir}": str(d), "{json}": str(d / "w.json"), "{trace}": str(d / "t.txt")}


@settings(max_examples=80, **FUZZ)
@given(sample=cli_options())
def test_bad_options_succeed_or_fail_in_one_line(cli_files, sample):
    args, _ = sample
    argv = []
    for a in args:
        for k, v in cli_files.items():
            a = a.replace(k, v)
        argv.append(a)
    out = CliRunner().invoke(main, argv)
    _one_clean_line(out, None)


# ---------------------------------------------------------------------------- subprocess
@settings(max_examples=6, **FUZZ)
@given(mutated_json())
def test_the_installed_command_on_mutated_workloads_never_prints_a_traceback(sample):
    kind, data = sample
    path = _write(data, ".json")
    try:
        out = subprocess.run([BIN, "run", path, "--policy", POLICY[kind], "--json",
                              "--no-lp-bound"], capture_output=True, text=True, timeout=120,
                             stdin=subprocess.DEVNULL)
    finally:
        os.unlink(path)
    assert "Traceback" not in out.stderr, out.stderr
    if out.returncode == 0:
        json.loads(out.stdout)
    else:
        assert out.returncode == 2 and out.stdout == "", out.stderr
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and path in lines[0], out.stderr
