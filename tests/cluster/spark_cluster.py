"""A Spark standalone cluster on 127.0.0.1, from the pip pyspark package, for the cluster tests.

The loopback cluster and ``docker-compose.yml`` are kept in lockstep (checked by
``tests/cluster/test_compose.py``):

* every node's environment is ``spark-conf/cluster.env`` (compose: ``env_file``) plus only
  the variables of :data:`HOST_VARS`, whose values name a host, a port or a local path;
* the master, the workers and the demo driver run the argv built by :func:`master_argv`,
  :func:`worker_argv` and :func:`demo_argv` (compose: ``command``);
* Spark settings come from ``spark-conf/`` (``SPARK_CONF_DIR``; compose mounts it).

:func:`start_cluster` starts a master and workers as child processes in their own process
groups, waits (bounded) until the master's ``/json`` lists every worker ALIVE, and returns a
:class:`SparkCluster` whose ``stop()`` kills exactly those process groups.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import re
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SPARK_CONF_DIR = REPO / "spark-conf"
CLUSTER_ENV = SPARK_CONF_DIR / "cluster.env"
DEMO = REPO / "scripts" / "demo_job.py"  # spark-submit entry point of minipaimon_spark/demo.py

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"

# The only variables a node gets besides cluster.env: their values differ between machines.
HOST_VARS = frozenset({
    "AWS_ENDPOINT_URL",  # the S3 store's address as the nodes see it
    "SPARK_CONF_DIR",    # where spark-conf/ is (compose mounts it; the image sets the path)
    "SPARK_LOCAL_IP",    # the address Spark binds to (127.0.0.1 here; unset in compose)
    "SPARK_WORKER_DIR",  # a worker's scratch directory (executor logs, app files)
    "PYSPARK_PYTHON",    # the interpreter with minipaimon installed, on every node
})

_ENV_LINE = re.compile(r"^([A-Z_][A-Z0-9_]*)=([^\s\"'#][^\"'#]*|)$")


def read_env_file(path: Path = CLUSTER_ENV) -> dict[str, str]:
    """The variables of a ``NAME=value`` file (blank lines and ``#`` comment lines skipped).

    Only the subset that docker compose's ``env_file`` reads the same way is accepted: no
    quotes, no spaces around ``=``, no inline comments, no ``export``. Raises ValueError
    naming the line otherwise.
    """
    env: dict[str, str] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = _ENV_LINE.match(line)
        if m is None or m.group(2) != m.group(2).rstrip():
            raise ValueError(f"{path}:{number}: not a plain NAME=value line: {line!r}")
        env[m.group(1)] = m.group(2)
    return env


def master_argv(host: str, port: int, webui_port: int) -> list[str]:
    """``spark-class`` arguments of the master (the REST server is off via cluster.env)."""
    return [MASTER_CLASS, "--host", host, "--port", str(port), "--webui-port", str(webui_port)]


def worker_argv(webui_port: int, master_url: str) -> list[str]:
    """``spark-class`` arguments of a worker; cores and memory come from cluster.env."""
    return [WORKER_CLASS, "--webui-port", str(webui_port), master_url]


def demo_argv(spark_submit: str, master_url: str, demo: str) -> list[str]:
    """The demo job as submitted to the cluster; its warehouse is $MINIPAIMON_WAREHOUSE."""
    return [spark_submit, "--master", master_url, demo]


def spark_home() -> Path:
    """The pip pyspark package directory: it holds ``bin/spark-class`` and the jars."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def node_env(host_env: Mapping[str, str]) -> dict[str, str]:
    """The environment of a node (or a driver): this process's, then cluster.env, then
    ``host_env``. Raises ValueError for a ``host_env`` name outside :data:`HOST_VARS`."""
    extra = set(host_env) - HOST_VARS
    if extra:
        raise ValueError(f"not host-specific, put it in {CLUSTER_ENV}: {sorted(extra)}")
    return {**os.environ, **read_env_file(), **host_env, "SPARK_HOME": str(spark_home())}


@dataclass
class SparkCluster:
    """A running standalone cluster: its master URL, web UI and the processes started."""

    master_url: str
    web_url: str
    env: dict[str, str]
    log_dir: Path
    _procs: list[subprocess.Popen[bytes]] = field(default_factory=list, repr=False)

    def status(self) -> dict[str, object]:
        """The master's ``/json`` status (workers, applications)."""
        with urllib.request.urlopen(f"{self.web_url}/json", timeout=5) as r:
            return json.loads(r.read())  # type: ignore[no-any-return]

    def logs(self, tail: int = 4000) -> str:
        """The end of every daemon log and executor stderr (for failure messages)."""
        parts = []
        for f in sorted(self.log_dir.rglob("*")):
            if f.is_file() and (f.suffix == ".log" or f.name == "stderr"):
                text = f.read_text(encoding="utf-8", errors="replace")
                parts.append(f"--- {f.relative_to(self.log_dir)}\n{text[-tail:]}")
        return "\n".join(parts)

    def stop(self) -> None:
        """Kill the workers' and the master's process groups (executors included)."""
        for proc in reversed(self._procs):
            _kill_group(proc)
        self._procs.clear()


def _die_with_parent() -> None:
    """In the child before exec: get SIGTERM when the test process dies (Linux), so a killed
    test run leaves no daemon behind (spark-class execs java; the setting survives exec)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _kill_group(proc: subprocess.Popen[bytes], grace_s: float = 10.0) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        except ProcessLookupError:
            pass


def start_cluster(work_dir: Path, host_env: Mapping[str, str], workers: int = 2,
                  timeout_s: float = 120.0) -> SparkCluster:
    """Start a master and ``workers`` workers on 127.0.0.1; return once all are ALIVE.

    ``host_env`` holds the :data:`HOST_VARS` values (SPARK_LOCAL_IP is forced to 127.0.0.1;
    each worker gets its own SPARK_WORKER_DIR under ``work_dir``). Raises RuntimeError,
    with the daemons' logs, if the cluster is not up within ``timeout_s``; whatever was
    started is stopped first.
    """
    env = node_env({**host_env, "SPARK_LOCAL_IP": "127.0.0.1"})
    spark_class = str(spark_home() / "bin" / "spark-class")
    port, webui = free_port(), free_port()
    cluster = SparkCluster(f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{webui}", env, work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)

    def spawn(name: str, argv: list[str], extra: Mapping[str, str]) -> None:
        with open(work_dir / f"{name}.log", "wb") as log:
            cluster._procs.append(subprocess.Popen(
                [spark_class, *argv], stdout=log, stderr=subprocess.STDOUT, cwd=work_dir,
                env={**env, **extra}, start_new_session=True,
                preexec_fn=_die_with_parent))

    deadline = time.monotonic() + timeout_s
    try:
        spawn("master", master_argv("127.0.0.1", port, webui), {})
        _wait(cluster, deadline, lambda s: s.get("status") == "ALIVE")
        for i in range(workers):
            worker_dir = work_dir / f"worker-{i}"
            worker_dir.mkdir(exist_ok=True)
            spawn(f"worker-{i}", worker_argv(free_port(), cluster.master_url),
                  {"SPARK_WORKER_DIR": str(worker_dir)})
        _wait(cluster, deadline, lambda s: _alive_workers(s) == workers)
    except BaseException:
        logs = cluster.logs()
        cluster.stop()
        raise RuntimeError(f"the Spark cluster did not come up:\n{logs}") from None
    return cluster


def _alive_workers(status: dict[str, object]) -> int:
    listed = status.get("workers")
    return sum(1 for w in listed if w.get("state") == "ALIVE") if isinstance(listed, list) else 0


def _wait(cluster: SparkCluster, deadline: float,
          ready: Callable[[dict[str, object]], bool]) -> None:
    """Poll the master's /json until ``ready(status)``; a daemon exiting or the deadline
    passing raises RuntimeError."""
    while True:
        dead = [p.args for p in cluster._procs if p.poll() is not None]
        if dead:
            raise RuntimeError(f"a Spark daemon exited: {dead}")
        try:
            if ready(cluster.status()):
                return
        except (urllib.error.URLError, ConnectionError, json.JSONDecodeError):
            pass  # the web UI is not listening yet
        if time.monotonic() > deadline:
            raise RuntimeError("timed out waiting for the Spark cluster")
        time.sleep(0.2)  # polling a readiness condition with a deadline
