"""The docs' Dask recipe, run as written on a local cluster of two worker processes."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

import irrun

distributed = pytest.importorskip("distributed")
pytest.importorskip("dask.bag")

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"


def recipe() -> str:
    """The first Python block under the "Scale-out with Dask" heading of the README or docs/."""
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        section = re.split(r"^#+ Scale-out with Dask\n", page.read_text(), maxsplit=1, flags=re.M)
        if len(section) == 2:
            block = re.search(r"```python\n(.*?)```", section[1], re.S)
            assert block, f"the Dask section of {page.name} has no Python block"
            return block.group(1)
    raise AssertionError("neither README.md nor docs/ has a 'Scale-out with Dask' section")


@pytest.fixture(scope="module")
def client():
    # Dask's nannies set OMP_NUM_THREADS=1 and the like in this process's environment to
    # start their workers, and leave them: later tests' worker processes would then run
    # BLAS on another thread count than this process, and differ in the last bit.
    environ = dict(os.environ)
    # Worker processes, one thread each, on localhost only, with no dashboard.
    try:
        with distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
            host="127.0.0.1",
        ) as cluster, distributed.Client(cluster) as c:  # fmt: skip
            yield c
    finally:
        os.environ.clear()
        os.environ.update(environ)


@pytest.fixture(scope="module")
def run_dir():
    namespace: dict = {"__name__": "readme_recipe"}
    exec(compile(recipe(), "Scale-out with Dask", "exec"), namespace)
    return namespace["run_dir"]


def load_npz(path: Path) -> dict[str, np.ndarray]:
    with np.load(path) as f:
        return dict(f)


def test_workers_run_this_checkouts_irrun(client):
    files = client.run(lambda: __import__("irrun").__file__)
    assert len(files) == 2
    assert {Path(f).resolve() for f in files.values()} == {Path(irrun.__file__).resolve()}


def test_the_readme_recipe_gives_model_run_s_values(client, run_dir, tmp_path):
    out = tmp_path / "out"
    results = run_dir(client, MODELS / "demo.xml", MODELS / "demo_batch", out)
    stems = ["cat", "dog", "fish"]
    assert [Path(r.target).name for r in results] == [f"{s}.npz" for s in stems]
    assert sorted(p.name for p in out.iterdir()) == [f"{s}.npz" for s in stems]
    model = irrun.load(MODELS / "demo.xml")
    for source in sorted((MODELS / "demo_batch").iterdir()):
        x = load_npz(source) if source.suffix == ".npz" else np.load(source)
        want = model.run(x)["probabilities"]
        # Dask's workers run BLAS on one thread: the convolutions may differ in the last bit.
        np.testing.assert_allclose(load_npz(out / f"{source.stem}.npz")["probabilities"], want,
                                   rtol=2e-6, atol=0)  # fmt: skip


def test_the_readme_recipe_is_bit_exact_without_blas(client, run_dir, tmp_path):
    # Pooling layers do not use BLAS: the workers' values are the same, bit for bit.
    (tmp_path / "in").mkdir()
    rng = np.random.default_rng(3)
    inputs = {f"x{i}": rng.standard_normal((1, 3, 16, 16)).astype(np.float32) for i in range(4)}
    for name, x in inputs.items():
        np.save(tmp_path / "in" / f"{name}.npy", x)
    shutil.copy(MODELS / "pooling_chain.inputs.npz", tmp_path / "in" / "bundled.npz")
    run_dir(client, MODELS / "pooling_chain.xml", tmp_path / "in", tmp_path / "out")
    model = irrun.load(MODELS / "pooling_chain.xml")
    inputs["bundled"] = load_npz(MODELS / "pooling_chain.inputs.npz")
    for name, x in inputs.items():
        got, want = load_npz(tmp_path / "out" / f"{name}.npz"), model.run(x)
        assert list(got) == list(want)
        for key in want:
            np.testing.assert_array_equal(got[key], want[key])
    expected = load_npz(MODELS / "pooling_chain.expected.npz")
    for key, value in expected.items():
        np.testing.assert_array_equal(load_npz(tmp_path / "out" / "bundled.npz")[key], value)
