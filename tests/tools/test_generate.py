"""``irrun generate`` on the command line: tokens streamed as they come, sampling flags,
and the hint that says how to install the tokenizers library.  (Decoding itself, and
the command's output and errors, are in tests/core/test_generation.py.)"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support.cli import run_cli

import irrun
from irrun.core.state import Request
from irrun.tools import generate as tool

ROOT = Path(__file__).resolve().parents[2]
LLAMA = ROOT / "tests" / "stateful" / "llama"
with np.load(LLAMA / "expected.npz") as _f:
    PROMPT = _f["prompt_ids"].tolist()
    GREEDY = _f["tokens"].tolist()  # OpenVINO's greedy tokens
IDS = ",".join(map(str, PROMPT))
ENV = {**os.environ, "PYTHONPATH": str(Path(irrun.__file__).parents[1])}


def _join(ids) -> str:
    return ",".join(map(str, ids))


def test_sampling_flags_through_a_subprocess():
    """--top-k 1 draws the greedy tokens; the seed and settings come back in the JSON."""
    done = subprocess.run(
        [sys.executable, "-m", "irrun", "generate", str(LLAMA), "--input-ids", IDS,
         "--max-new-tokens", "5", "--ignore-eos", "--do-sample", "--top-k", "1",
         "--temperature", "3", "--seed", "11", "--json"],
        capture_output=True, text=True, env=ENV, check=False, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["tokens"] == GREEDY[:5]
    assert report["sampling"] == {"temperature": 3.0, "top_k": 1, "top_p": 1.0, "seed": 11}


def test_a_terminal_sees_each_token_as_it_comes():
    """On a terminal (a pseudo-terminal here) the ids come first, as they are made."""
    main, child = pty.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "irrun", "generate", str(LLAMA), "--input-ids", IDS,
             "--max-new-tokens", "4", "--ignore-eos"],
            stdout=child, stderr=subprocess.PIPE, env=ENV,
        )  # fmt: skip
        os.close(child)
        chunks = []
        while True:
            try:
                data = os.read(main, 4096)
            except OSError:  # the terminal closes with the process
                break
            if not data:
                break
            chunks.append(data)
        assert proc.wait(timeout=120) == 0, proc.stderr.read() if proc.stderr else ""
    finally:
        os.close(main)
    lines = b"".join(chunks).decode().splitlines()
    assert lines[0] == _join(GREEDY[:4])
    assert lines[1].startswith("prompt ") and lines[2].startswith("tokens ")


class _Recorder:
    """A stdout that logs writes and flushes, in order with the model's runs."""

    def __init__(self, events: list) -> None:
        self.events = events

    def write(self, text: str) -> int:
        self.events.append(("write", text))
        return len(text)

    def flush(self) -> None:
        self.events.append(("flush",))

    def isatty(self) -> bool:
        return False


def test_stream_writes_each_token_before_the_next_run(monkeypatch):
    events: list = []
    real_run = Request.run

    def run(self, *args, **kwargs):
        events.append(("run",))
        return real_run(self, *args, **kwargs)

    monkeypatch.setattr(Request, "run", run)
    monkeypatch.setattr(sys, "stdout", _Recorder(events))
    assert irrun.cli.main(["generate", str(LLAMA), "--input-ids", IDS, "--max-new-tokens", "3",
                           "--ignore-eos", "--stream", "-q"]) == 0  # fmt: skip
    a, b, c = GREEDY[:3]
    head = [("run",), ("write", str(a)), ("flush",), ("run",), ("write", f",{b}"), ("flush",),
            ("run",), ("write", f",{c}"), ("flush",), ("write", "\n")]  # fmt: skip
    assert events[: len(head)] == head
    assert "".join(e[1] for e in events if e[0] == "write").splitlines()[1].startswith("prompt")


def test_stream_of_text(capsys):
    pytest.importorskip("tokenizers", reason="--prompt uses the optional tokenizers library")
    rc, out, err = run_cli(capsys, "generate", str(LLAMA), "--prompt", "The quick brown fox",
                           "--max-new-tokens", "6", "--ignore-eos", "--stream")  # fmt: skip
    assert rc == 0, err
    lines = out.splitlines()
    text_line = next(line for line in lines if line.startswith("text "))
    assert repr(lines[0]) == text_line.split(None, 1)[1]  # streamed: the text in full


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--top-k", "3"], "irrun: error: --top-k only applies when sampling: add --do-sample"),
        (["--seed", "1", "--top-p", "0.5"], "--top-p, --seed only apply when sampling"),
        (["--do-sample", "--temperature", "0"], "--temperature must be above 0, not 0.0"),
        (["--do-sample", "--top-p", "1.5"], "invalid --top-p value: '1.5'"),
        (["--do-sample", "--top-k", "-1"], "invalid --top-k value: '-1'"),
        (["--stream", "--json"], "--stream prints tokens and --json one JSON object"),
    ],
)  # fmt: skip
def test_sampling_misuse_is_exit_2(args, message, capsys):
    rc, out, err = run_cli(capsys, "generate", str(LLAMA), "--input-ids", IDS, *args)
    assert rc == 2 and out == ""
    assert message in err


# ------------------------------------------------------------------ the tokenizers hint


class _Dist:
    def __init__(self, direct_url: dict | None, extras=("text", "jit", "test"),
                 located: Path | None = None) -> None:  # fmt: skip
        self.direct_url, self.located = direct_url, located
        self.metadata = type("M", (), {"get_all": lambda _, key: list(extras)})()

    def read_text(self, name: str) -> str | None:
        assert name == "direct_url.json"
        return None if self.direct_url is None else json.dumps(self.direct_url)

    def locate_file(self, name: str) -> Path:
        return (self.located or Path("/elsewhere")) / name


TREE = Path(tool.__file__).resolve().parents[2]  # the source tree irrun runs from


@pytest.mark.parametrize(
    ("dist", "hint"),
    [
        # pip install -e /path/to/irrun: the extra, from that folder, editable
        (_Dist({"url": f"file://{TREE}", "dir_info": {"editable": True}}),
         f'pip install -e "{TREE}[text]"'),
        # pip install /path/to/irrun (a copy): from that folder again
        (_Dist({"url": f"file://{TREE}", "dir_info": {}}), f'pip install "{TREE}[text]"'),
        # installed from another folder than the one running: only the package is sure
        (_Dist({"url": "file:///somewhere/else", "dir_info": {"editable": True}}),
         "pip install tokenizers"),
        # from a Git URL
        (_Dist({"url": "https://github.com/x/irrun", "vcs_info": {"vcs": "git"}}),
         "pip install tokenizers"),
        # from an index, this very package
        (_Dist(None, located=TREE), 'pip install "irrun[text]"'),
        # a version without the extra
        (_Dist(None, extras=(), located=TREE), "pip install tokenizers"),
    ],
)  # fmt: skip
def test_the_install_hint_fits_the_installation(dist, hint, monkeypatch):
    monkeypatch.setattr(tool.metadata, "distribution", lambda name: dist)
    assert tool.install_hint("text", "tokenizers") == hint


def test_the_install_hint_without_an_installed_irrun(monkeypatch):
    def missing(name):
        raise tool.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(tool.metadata, "distribution", missing)
    assert tool.install_hint("text", "tokenizers") == "pip install tokenizers"


def test_the_missing_library_error_gives_the_hint(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tokenizers", None)  # import fails
    hint = tool.install_hint("text", "tokenizers")
    rc, _, err = run_cli(capsys, "generate", str(LLAMA), "--prompt", "hello")
    assert rc == 2
    assert err.strip() == (f"irrun: error: --prompt needs the tokenizers library: {hint} "
                           "(or give --input-ids)")  # fmt: skip
