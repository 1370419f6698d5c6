"""``irrun run --input-dir DIR --output-dir OUT``: one output per input, errors, jobs, reporting."""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support.cli import TWO_INPUTS_IR, load_npz, run_cli

import irrun
from irrun.cli import main
from irrun.tools import batch

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"
DEMO = str(MODELS / "demo.xml")
SUMMARY = re.compile(r"(\d+) inputs?, (\d+) outputs? written to (.+?)(, .*)? in \d+\.\d\d s")


def feeds_of(path: Path) -> dict[str, np.ndarray] | np.ndarray:
    return load_npz(path) if path.suffix == ".npz" else np.load(path)


@pytest.fixture
def demo_dir(tmp_path) -> Path:
    """The bundled demo inputs, two more of each kind, and files a batch ignores."""
    d = tmp_path / "in"
    shutil.copytree(MODELS / "demo_batch", d)
    rng = np.random.default_rng(5)
    for i in range(2):
        np.save(d / f"extra{i}.npy", rng.standard_normal((1, 3, 32, 32)).astype(np.float32))
        np.savez(d / f"more{i}.npz", image=rng.standard_normal((1, 3, 32, 32)).astype(np.float32))
    (d / "notes.txt").write_text("not an input")
    np.save(d / ".hidden.npy", np.zeros(3))
    (d / "sub.npy").mkdir()  # a directory, whatever its name
    return d


STEMS = ["cat", "dog", "extra0", "extra1", "fish", "more0", "more1"]


def test_one_output_per_input_equal_to_model_run(demo_dir, tmp_path, capsys):
    out = tmp_path / "out" / "nested"  # created, parents too
    rc, stdout, err = run_cli(capsys, DEMO, "--input-dir", str(demo_dir), "--output-dir", str(out))
    assert (rc, err) == (0, "")
    m = SUMMARY.fullmatch(stdout.rstrip("\n"))
    assert m and m.groups()[:3] == ("7", "7", str(out)), stdout
    assert sorted(p.name for p in out.iterdir()) == [f"{s}.npz" for s in STEMS]
    model = irrun.load(DEMO)
    for stem in STEMS:
        source = next(demo_dir.glob(f"{stem}.np?"))
        got = load_npz(out / f"{stem}.npz")
        want = model.run(feeds_of(source))
        assert list(got) == ["probabilities"]
        np.testing.assert_array_equal(got["probabilities"], want["probabilities"])
    # cat.npy is the bundled demo input: OpenVINO's values, within its summation order.
    expected = load_npz(MODELS / "demo.expected.npz")["probabilities"]
    np.testing.assert_allclose(load_npz(out / "cat.npz")["probabilities"], expected, atol=1e-5)


BUNDLED = sorted(p.name.removesuffix(".inputs.npz") for p in MODELS.glob("*.inputs.npz"))


@pytest.mark.parametrize("name", BUNDLED)
def test_bundled_inputs_give_openvinos_expected_outputs(name, tmp_path, capsys):
    (tmp_path / "in").mkdir()
    shutil.copy(MODELS / f"{name}.inputs.npz", tmp_path / "in" / "x.npz")
    args = [str(MODELS / f"{name}.xml"), "--input-dir", str(tmp_path / "in")]
    rc, _, err = run_cli(capsys, *args, "--output-dir", str(tmp_path / "out"), "-q")
    assert (rc, err) == (0, "")
    got, want = load_npz(tmp_path / "out" / "x.npz"), load_npz(MODELS / f"{name}.expected.npz")
    assert list(got) == list(want)
    for key in want:
        assert got[key].dtype == want[key].dtype
        if name == "demo":  # OpenVINO's convolutions sum in another order
            np.testing.assert_allclose(got[key], want[key], atol=1e-5)
        else:
            np.testing.assert_array_equal(got[key], want[key])


def test_jobs_give_the_same_outputs(demo_dir, tmp_path, capsys):
    """With the same threads per run (BLAS may add up a convolution in another order with
    another count), workers write what one process does, bit for bit."""
    one, two = tmp_path / "one", tmp_path / "two"
    assert run_cli(capsys, DEMO, "--input-dir", str(demo_dir), "--output-dir", str(one),
                   "--threads", "1")[0] == 0  # fmt: skip
    rc, out, err = run_cli(
        capsys, DEMO, "--input-dir", str(demo_dir), "--output-dir", str(two), "--jobs", "2", "-v",
        "--threads", "1",
    )
    assert (rc, err) == (0, "")
    # Workers report in the order they finish: one line per file, whatever the order.
    lines = out.splitlines()
    assert sorted(Path(line.split(" -> ")[0]).stem for line in lines[:-1]) == STEMS
    assert SUMMARY.fullmatch(lines[-1])
    assert sorted(p.name for p in two.iterdir()) == sorted(p.name for p in one.iterdir())
    for path in one.iterdir():
        a, b = load_npz(path), load_npz(two / path.name)
        assert list(a) == list(b)
        for key in a:
            np.testing.assert_array_equal(a[key], b[key])


def _bad_batch(directory: Path) -> dict[str, str]:
    """Good and bad files for the pooling_chain model; the bad ones with what is said of them."""
    directory.mkdir()
    x = np.random.default_rng(0).standard_normal((1, 3, 16, 16)).astype(np.float32)
    np.save(directory / "a_good.npy", x)
    np.save(directory / "b_shape.npy", x[:, :, :8])
    np.savez(directory / "c_key.npz", picture=x)
    (directory / "d_text.npy").write_text("1 2 3\n")
    np.save(directory / "e_dtype.npy", x.astype(np.float64))
    np.savez(directory / "f_good.npz", image=x + 1)
    d = directory
    return {
        "b_shape": f"{d / 'b_shape.npy'}: {MODELS / 'pooling_chain.xml'}:4: layer 0 'image' "
        "(Parameter-v1): input 'image' has shape [1,3,8,16], expected [1,3,16,16]",
        "c_key": f"{d / 'c_key.npz'}: array 'picture' is not an input of pooling_chain.xml "
        "(inputs: image)",
        "d_text": f"{d / 'd_text.npy'}: not a .npy or .npz file (no NumPy or zip header)",
        "e_dtype": f"{d / 'e_dtype.npy'}: {MODELS / 'pooling_chain.xml'}:4: layer 0 'image' "
        "(Parameter-v1): input 'image' has element type f64, expected f32 (numpy float32): "
        "convert it, or pass cast=True (--cast on the command line) to have it converted with "
        "a check of its range",
    }


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_bad_file_is_named_and_the_others_are_written(jobs, tmp_path, capsys):
    bad = _bad_batch(tmp_path / "in")
    out = tmp_path / "out"
    rc, stdout, err = run_cli(
        capsys, str(MODELS / "pooling_chain.xml"), "--input-dir", str(tmp_path / "in"),
        "--output-dir", str(out), "--jobs", jobs,
    )  # fmt: skip
    assert rc == 1
    lines = err.splitlines()
    assert sorted(lines[:-1]) == [f"irrun: error: {message}" for message in bad.values()]
    failed = ", ".join(str(tmp_path / "in" / f"{s}.npy") for s in ("b_shape", "c_key", "d_text"))
    failed = failed.replace("c_key.npy", "c_key.npz")
    if jobs == "1":  # in file order
        assert lines[-1] == (
            f"irrun: error: 4 of 6 input files failed: {failed}, {tmp_path / 'in' / 'e_dtype.npy'}"
        )
    else:
        assert lines[-1].startswith("irrun: error: 4 of 6 input files failed: ")
    m = SUMMARY.fullmatch(stdout.rstrip("\n"))
    assert m and m.groups() == ("6", "2", str(out), ", 4 failed"), stdout
    # The good ones are written, and nothing else: no output, no temporary file, for the bad.
    assert sorted(p.name for p in out.iterdir()) == ["a_good.npz", "f_good.npz"]


def test_fail_fast_stops_at_the_first_bad_file(tmp_path, capsys):
    _bad_batch(tmp_path / "in")
    out = tmp_path / "out"
    args = [str(MODELS / "pooling_chain.xml"), "--input-dir", str(tmp_path / "in")]
    rc, stdout, err = run_cli(capsys, *args, "--output-dir", str(out), "--fail-fast")
    assert rc == 1
    assert err.splitlines()[0].startswith(f"irrun: error: {tmp_path / 'in' / 'b_shape.npy'}: ")
    assert err.splitlines()[1].startswith("irrun: error: 1 of 6 input files failed: ")
    assert SUMMARY.fullmatch(stdout.rstrip("\n")).group(4) == ", 1 failed, 4 not run (--fail-fast)"
    assert [p.name for p in out.iterdir()] == ["a_good.npz"]
    # With workers, files already running finish; the others are not started.
    rc, stdout, err = run_cli(capsys, *args, "--output-dir", str(tmp_path / "o2"), "--fail-fast",
                              "--jobs", "2")  # fmt: skip
    assert rc == 1
    m = SUMMARY.fullmatch(stdout.rstrip("\n"))
    written, rest = int(m.group(2)), m.group(4)
    assert written == len(list((tmp_path / "o2").iterdir())) >= 1
    assert re.fullmatch(r", [1-4] failed(, \d not run \(--fail-fast\))?", rest), rest
    assert err.splitlines()[-1].startswith("irrun: error: ")


def test_npz_files_feed_several_inputs_by_name(tmp_path, capsys):
    (tmp_path / "two.xml").write_text(TWO_INPUTS_IR)
    d = tmp_path / "in"
    d.mkdir()
    a = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    np.savez(d / "both.npz", a=a, b=-a)
    np.save(d / "one.npy", a)
    np.savez(d / "half.npz", a=a)
    rc, _, err = run_cli(
        capsys, str(tmp_path / "two.xml"), "--input-dir", str(d), "--output-dir",
        str(tmp_path / "out"), "-q",
    )  # fmt: skip
    assert rc == 1
    two = str(tmp_path / "two.xml")
    assert err.splitlines() == [
        f"irrun: error: {d / 'half.npz'}: {two}: no value given for input 'b'",
        f"irrun: error: {d / 'one.npy'}: a .npy feeds a model with one input, and two.xml has 2 "
        "(a, b): use an .npz keyed by input name",
        f"irrun: error: 2 of 3 input files failed: {d / 'half.npz'}, {d / 'one.npy'}",
    ]
    want = irrun.load(two).run({"a": a, "b": -a})
    got = load_npz(tmp_path / "out" / "both.npz")
    assert list(got) == list(want)
    for key in want:
        np.testing.assert_array_equal(got[key], want[key])


def test_a_failed_write_leaves_no_file(demo_dir, tmp_path, capsys, monkeypatch):
    def full_disk(file, arrays):
        file.write(b"PK\x03\x04 half an archive")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(irrun.tools.common, "write_npz", full_disk)
    out = tmp_path / "out"
    rc, _, err = run_cli(capsys, DEMO, "--input-dir", str(demo_dir), "--output-dir", str(out))
    assert rc == 1
    assert err.splitlines()[0] == (
        f"irrun: error: {demo_dir / 'cat.npy'}: {out / 'cat.npz'}: cannot write: "
        "No space left on device"
    )
    assert list(out.iterdir()) == []


def test_outputs_are_replaced_or_with_resume_kept(demo_dir, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "cat.npz").write_bytes(b"old")
    (out / "dog.npz").write_bytes(b"old")
    args = [DEMO, "--input-dir", str(demo_dir), "--output-dir", str(out)]
    rc, stdout, _ = run_cli(capsys, *args, "--resume", "-v")
    assert rc == 0
    assert (out / "cat.npz").read_bytes() == b"old"
    assert f"{demo_dir / 'cat.npy'}: skipped, {out / 'cat.npz'} is there\n" in stdout
    m = SUMMARY.fullmatch(stdout.splitlines()[-1])
    assert m and m.groups() == ("7", "5", str(out), ", 2 skipped (already there)")
    assert run_cli(capsys, *args)[0] == 0
    assert "probabilities" in load_npz(out / "cat.npz")


def test_quiet_prints_nothing_and_verbose_a_line_per_file(demo_dir, tmp_path, capsys):
    args = [DEMO, "--input-dir", str(demo_dir), "--output-dir", str(tmp_path / "out")]
    assert run_cli(capsys, *args, "-q") == (0, "", "")
    rc, out, err = run_cli(capsys, *args, "--verbose")
    assert (rc, err) == (0, "")
    lines = out.splitlines()
    assert len(lines) == len(STEMS) + 1
    for stem, line in zip(STEMS, lines, strict=False):
        source = next(demo_dir.glob(f"{stem}.np?"))
        target = tmp_path / "out" / f"{stem}.npz"
        pattern = rf"{re.escape(f'{source} -> {target}: probabilities [1,10] float32')} \(\d+\.\d ms\)"
        assert re.fullmatch(pattern, line), line


# --- misuse and errors ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "complaint"),
    [
        (["--input-dir", "in"], "--input-dir needs --output-dir, where the outputs go"),
        (["--output-dir", "out"], "--output-dir needs --input-dir"),
        (["--jobs", "2", "--resume"], "--jobs, --resume need --input-dir"),
        (["--input-dir", "in", "--output-dir", "out", "--input", "in/a.npy"],
         "--input and --input-dir do not go together: inputs come from DIR"),
        (["--input-dir", "in", "--output-dir", "out", "-o", "o.npz"],
         "--output and --input-dir do not go together: outputs go to --output-dir"),
        (["--input-dir", "in", "--output-dir", "in"],
         "--output-dir in is --input-dir: the outputs would replace .npz inputs"),
        (["--input-dir", "in", "--output-dir", "out", "--dump-dir", "d", "--profile"],
         "--dump-dir, --profile and --input-dir do not go together: run the input of interest with --input"),
    ],
)  # fmt: skip
def test_misuse_exits_2(extra, complaint, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in").mkdir()
    np.save(tmp_path / "in" / "a.npy", np.zeros((1, 3, 32, 32), np.float32))
    assert run_cli(capsys, DEMO, *extra) == (2, "", f"irrun: error: {complaint}\n")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("extra", [["-q", "-v"], ["--jobs", "-1"], ["--jobs", "many"]])
def test_argparse_misuse_exits_2(extra, capsys):
    with pytest.raises(SystemExit) as exc:
        main([DEMO, "--input-dir", "in", "--output-dir", "out", *extra])
    assert exc.value.code == 2
    assert "usage:" in capsys.readouterr().err


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_shape_applies_to_every_file_and_every_worker(jobs, tmp_path, capsys):
    (tmp_path / "in").mkdir()
    rng = np.random.default_rng(3)
    xs = {f"x{i}": rng.standard_normal((2, 3, 24, 24)).astype(np.float32) for i in range(3)}
    for name, x in xs.items():
        np.save(tmp_path / "in" / f"{name}.npy", x)
    chain = str(MODELS / "pooling_chain.xml")
    rc, _, err = run_cli(capsys, chain, "--shape", "image[2,3,24,24]", "--input-dir",
                         str(tmp_path / "in"), "--output-dir", str(tmp_path / "out"), "-j", jobs)  # fmt: skip
    assert rc == 0, err
    model = irrun.load(chain)
    model.reshape({"image": [2, 3, 24, 24]})
    for name, x in xs.items():
        got = load_npz(tmp_path / "out" / f"{name}.npz")
        want = model.run(x)
        assert got["pooled"].shape == (2, 3, 2, 2)
        for key in want:
            np.testing.assert_array_equal(got[key], want[key])


def test_jobs_auto_and_0_mean_one_per_cpu():
    assert batch.jobs_count("auto") == batch.jobs_count("0") == 0
    assert batch.jobs_count("3") == 3


def test_directory_errors_exit_1(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("empty").mkdir()
    Path("afile").write_text("")
    Path("clash").mkdir()
    np.save("clash/x.npy", np.zeros(1))
    np.savez("clash/x.npz", image=np.zeros(1))
    for extra, message in [
        (["--input-dir", "missing"], "missing: --input-dir: no such directory"),
        (["--input-dir", "afile"], "afile: --input-dir: not a directory"),
        (["--input-dir", "empty"], "empty: --input-dir: no .npy or .npz files in it"),
        (["--input-dir", "clash"],
         "clash: x.npy and x.npz would both be written to out/x.npz: rename one"),
        (["--input-dir", "clash", "--output-dir", "afile"],
         "afile: --output-dir: is a file, expected a directory"),
    ]:  # fmt: skip
        args = [DEMO, "--output-dir", "out", *extra]
        assert run_cli(capsys, *args) == (1, "", f"irrun: error: {message}\n")
    assert not Path("out").exists()


def test_a_model_that_does_not_load_stops_before_any_file(demo_dir, tmp_path, capsys):
    bad = tmp_path / "bad.xml"
    bad.write_text("<net")
    rc, out, err = run_cli(capsys, str(bad), "--input-dir", str(demo_dir), "--output-dir",
                           str(tmp_path / "out"))  # fmt: skip
    assert (rc, out) == (1, "")
    assert err.startswith(f"irrun: error: {bad}:")
    assert list((tmp_path / "out").iterdir()) == []


# --- progress ------------------------------------------------------------------------------


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_only_on_a_terminal_and_not_quiet():
    assert batch.progress(3, FakeTerminal()).shown
    assert not batch.progress(3, FakeTerminal(), quiet=True).shown
    assert not batch.progress(3, io.StringIO()).shown
    terminal = FakeTerminal()
    bar = batch.progress(3, terminal)
    for _ in range(3):
        bar.update()
    bar.close()
    # tqdm redraws at most every 0.1 s, and a bar with leave=False is erased when done.
    assert " 0/3 [" in terminal.getvalue()
    assert terminal.getvalue().endswith("\r")


def test_batch_draws_a_bar_on_a_terminals_stderr(demo_dir, tmp_path, capsys, monkeypatch):
    terminal = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    args = [DEMO, "--input-dir", str(demo_dir), "--output-dir", str(tmp_path / "out"), "-v"]
    assert main(args) == 0
    assert f" 0/{len(STEMS)} [" in terminal.getvalue()
    out = capsys.readouterr().out
    assert len(out.splitlines()) == len(STEMS) + 1  # the lines still go to stdout, whole
    quiet = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", quiet)
    assert main([*args[:-1], "-q"]) == 0
    assert quiet.getvalue() == ""


# --- as a process --------------------------------------------------------------------------


def test_as_a_process_with_workers(tmp_path):
    _bad_batch(tmp_path / "in")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # this checkout's irrun, in every process
    proc = subprocess.run(
        [sys.executable, "-m", "irrun", str(MODELS / "pooling_chain.xml"), "--input-dir", "in",
         "--output-dir", "out", "--jobs", "auto"],
        capture_output=True, text=True, cwd=tmp_path, timeout=120, env=env,
    )  # fmt: skip
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.splitlines()) == 5
    assert SUMMARY.fullmatch(proc.stdout.rstrip("\n")).groups() == ("6", "2", "out", ", 4 failed")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["a_good.npz", "f_good.npz"]
