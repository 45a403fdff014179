"""`pip install ./python` works against an installed libgemmd without
fetching anything: Debian's setuptools builds it, no network."""

import os
import shutil
import subprocess
import sys

import pytest

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_pip_install(tmp_path, daemon):
    pip = subprocess.run([sys.executable, "-m", "pip", "--version"],
                         capture_output=True)
    if pip.returncode != 0:
        pytest.skip("no pip (Debian: python3-pip)")
    src = tmp_path / "src"  # pip builds in place: not in the checkout
    shutil.copytree(SOURCE, src, ignore=shutil.ignore_patterns(
        "tests", "build", "*.egg-info", "__pycache__"))
    target = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-index",
                        "--no-build-isolation", "--no-deps", "--target",
                        str(target), str(src)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    env = dict(os.environ, PYTHONPATH=str(target), GEMMD_URL=daemon.ipc)
    r = subprocess.run([sys.executable, "-c", """
import numpy as np, gemmd
print(gemmd.__file__)
with gemmd.Client() as c:
    a = np.random.default_rng().uniform(-1, 1, (20, 10))
    assert np.allclose(c.gemm(a, a.T), a @ a.T)
"""], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(str(target))
