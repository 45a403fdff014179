"""python -m gemmd: the daemon's documents as JSON."""

import json
import os
import subprocess
import sys


def run(*args, env=None):
    return subprocess.run([sys.executable, "-m", "gemmd", *args],
                          capture_output=True, text=True, env=env)


def test_stats_and_ping(daemon):
    r = run("stats", "--url", daemon.ipc)
    assert r.returncode == 0, r.stderr
    assert "jobs" in json.loads(r.stdout)
    env = dict(os.environ, GEMMD_URL=daemon.tcp)
    assert json.loads(run("ping", env=env).stdout)["engine"] == "cpu"


def test_no_daemon(tmp_path):
    r = run("ping", "--url", f"ipc://{tmp_path}/none.sock")
    assert r.returncode == 1 and "ETRANSPORT" in r.stderr
