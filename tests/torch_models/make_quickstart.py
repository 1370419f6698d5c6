"""Regenerate quickstart.xml/.bin: the model of the README's "A model you converted",
converted by the very code the README shows (read from it and run here, so that the two
cannot drift apart), with torch's default random initialisation seeded.

    python tests/torch_models/make_quickstart.py   # needs torch and openvino

tests/cli/test_quickstart.py runs the README's commands on it; like every model in this
folder, tests/models/test_torch_models.py compares it with OpenVINO's CPU plugin.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
README = HERE.parents[1] / "README.md"


def readme_code() -> str:
    """The Python the README's quick start feeds to ``python - <<'EOF'``."""
    section = README.read_text().split("## A model you converted", 1)[1]
    return re.search(r"python - <<'EOF'\n(.*?)\nEOF\n", section, re.S).group(1)


def main() -> None:
    os.environ.setdefault("CI", "true")  # OpenVINO's telemetry slows conversion tenfold
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        cwd = os.getcwd()
        os.chdir(tmp)
        try:
            exec(compile(readme_code(), "README.md", "exec"), {})
        finally:
            os.chdir(cwd)
        for suffix in (".xml", ".bin"):
            shutil.copy(Path(tmp) / f"net{suffix}", HERE / f"quickstart{suffix}")


if __name__ == "__main__":
    main()
