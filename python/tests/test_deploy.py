"""The deployment files (deploy/k8s/*.yaml, deploy/docker/Dockerfile) against the server.

The manifests are parsed (YAML) and cross-checked with the server's ``--help`` (every
flag and ``CTXSCRIBE_*`` variable they use exists), with each other (ports, probe
paths, labels, the Secret, the grace period against the request timeout) and with the
Dockerfile (user, port, model path). Then the real server binary runs with the
Deployment's arguments and environment (local paths and a free port swapped in) and
the Dockerfile's HEALTHCHECK command probes it. No cluster and no image are needed
(this machine has neither a Kubernetes cluster nor a Docker daemon). About 10 s.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shlex
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from support import REPO

K8S = REPO / "deploy" / "k8s"
DOCKERFILE = REPO / "deploy" / "docker" / "Dockerfile"
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))


def server_binary() -> Path:
    """The release server binary (built by `cargo test`; built here if missing)."""
    binary = TARGET / "release" / "ctxscribe-server"
    if not binary.is_file():
        subprocess.run(
            ["cargo", "build", "--release", "--features", "server", "--bin", "ctxscribe-server"],
            cwd=REPO,
            check=True,
        )
    return binary


@pytest.fixture(scope="module")
def manifests() -> dict[str, dict[str, Any]]:
    """Every object of deploy/k8s by kind (one of each)."""
    yaml = importlib.import_module("yaml")
    objects: dict[str, dict[str, Any]] = {}
    for path in sorted(K8S.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            assert doc["kind"] not in objects, f"{path}: a second {doc['kind']}"
            objects[doc["kind"]] = doc
    return objects


@pytest.fixture(scope="module")
def help_text() -> str:
    done = subprocess.run(
        [str(server_binary()), "--help"], capture_output=True, text=True, check=True
    )
    return done.stdout


def container(manifests: dict[str, dict[str, Any]]) -> dict[str, Any]:
    containers = manifests["Deployment"]["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    result: dict[str, Any] = containers[0]
    return result


def env_of(manifests: dict[str, dict[str, Any]]) -> dict[str, str]:
    return {e["name"]: str(e["value"]) for e in container(manifests)["env"]}


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text(encoding="utf-8"))
    lines = [line.strip() for line in text.splitlines()]
    return [
        (line.split(None, 1)[0].upper(), line.split(None, 1)[1] if " " in line else "")
        for line in lines
        if line and not line.startswith("#")
    ]


def test_flags_and_variables_exist(manifests: dict[str, dict[str, Any]], help_text: str) -> None:
    flags = set(re.findall(r"^\s+(--[a-z-]+)", help_text, re.M))
    variables = set(re.findall(r"env: (CTXSCRIBE_[A-Z_]+)", help_text))
    assert {"--port", "--host", "--threads"} <= flags and len(variables) == len(flags)
    args = container(manifests)["args"]
    assert {a for a in args if a.startswith("--")} <= flags, args
    assert set(env_of(manifests)) <= variables, env_of(manifests)
    docker_env = {
        name
        for instruction, rest in dockerfile_instructions()
        if instruction == "ENV"
        for name in re.findall(r"(CTXSCRIBE_[A-Z_]+)=", rest)
    }
    assert docker_env and docker_env <= variables, docker_env


def test_ports_probes_and_selectors(manifests: dict[str, dict[str, Any]]) -> None:
    server = container(manifests)
    args = server["args"]
    port = int(args[args.index("--port") + 1])
    (named,) = server["ports"]
    assert (named["name"], named["containerPort"]) == ("http", port)
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert server[probe]["httpGet"] == {"path": "/health", "port": "http"}, probe
    labels = manifests["Deployment"]["spec"]["template"]["metadata"]["labels"]
    assert manifests["Deployment"]["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert manifests["Service"]["spec"]["selector"].items() <= labels.items()
    assert manifests["Service"]["spec"]["ports"][0]["targetPort"] == "http"
    budget = manifests["PodDisruptionBudget"]["spec"]
    assert budget["selector"]["matchLabels"].items() <= labels.items()
    target = manifests["HorizontalPodAutoscaler"]["spec"]["scaleTargetRef"]
    deployment = manifests["Deployment"]["metadata"]["name"]
    assert (target["kind"], target["name"]) == ("Deployment", deployment)
    (metric,) = manifests["HorizontalPodAutoscaler"]["spec"]["metrics"]
    assert metric["resource"]["name"] == "cpu"
    # Exposed port, user and model path agree with the image.
    docker = dockerfile_instructions()
    assert ("EXPOSE", str(port)) in docker
    env = env_of(manifests)
    docker_env = " ".join(rest for instruction, rest in docker if instruction == "ENV")
    assert f"CTXSCRIBE_MODEL={env['CTXSCRIBE_MODEL']}" in docker_env
    (user,) = [rest for instruction, rest in docker if instruction == "USER"]
    security = manifests["Deployment"]["spec"]["template"]["spec"]["securityContext"]
    assert user == f"{security['runAsUser']}:{security['runAsGroup']}" and security["runAsNonRoot"]


def test_shutdown_outlasts_the_request_timeout(manifests: dict[str, dict[str, Any]]) -> None:
    server = container(manifests)
    pre_stop = server["lifecycle"]["preStop"]["exec"]["command"]
    assert pre_stop[0] == "sleep"
    timeout = float(env_of(manifests)["CTXSCRIBE_REQUEST_TIMEOUT"])
    grace = manifests["Deployment"]["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    # The server drains for the request timeout plus 5 s after SIGTERM.
    assert grace > float(pre_stop[1]) + timeout + 5, (grace, pre_stop, timeout)
    assert server["readinessProbe"]["failureThreshold"] == 1


def test_resources_match_the_engine_settings(manifests: dict[str, dict[str, Any]]) -> None:
    env = env_of(manifests)
    resources = container(manifests)["resources"]
    cores = int(env["CTXSCRIBE_THREADS"]) * int(env["CTXSCRIBE_MAX_CONCURRENT"])
    assert float(resources["requests"]["cpu"]) == cores
    mib = {"Mi": 1, "Gi": 1024}
    request, limit = (
        int(v[:-2]) * mib[v[-2:]]
        for v in (resources["requests"]["memory"], resources["limits"]["memory"])
    )
    # Measured peak RSS of the base model under load (docs/deploy.md: 273 MiB) fits the request.
    assert 273 < request <= limit


def test_api_keys_come_from_the_secret(manifests: dict[str, dict[str, Any]]) -> None:
    spec = manifests["Deployment"]["spec"]["template"]["spec"]
    (volume,) = [v for v in spec["volumes"] if "secret" in v]
    assert volume["secret"]["secretName"] == manifests["Secret"]["metadata"]["name"]
    (mount,) = [m for m in container(manifests)["volumeMounts"] if m["name"] == volume["name"]]
    (item,) = volume["secret"]["items"]
    assert env_of(manifests)["CTXSCRIBE_API_KEY_FILE"] == f"{mount['mountPath']}/{item['path']}"
    assert item["key"] in manifests["Secret"]["stringData"]
    assert "CTXSCRIBE_API_KEYS" not in env_of(manifests), "keys belong in the Secret's file"
    kustomization = (K8S / "kustomization.yaml").read_text(encoding="utf-8")
    for kind in ("deployment", "service", "hpa", "pdb"):
        assert f"- {kind}.yaml" in kustomization
    assert "secret.example.yaml" not in kustomization.split("resources:")[1]


def test_dockerfile_stages(manifests: dict[str, dict[str, Any]]) -> None:
    docker = dockerfile_instructions()
    stages = [rest for instruction, rest in docker if instruction == "FROM"]
    assert len(stages) == 2 and stages[0].endswith(" AS build") and "-slim" in stages[1]
    runs = " ".join(rest for instruction, rest in docker if instruction == "RUN")
    assert "scripts/prepare-models.sh" in runs and "--locked" in runs
    assert "useradd" in runs
    copies = [rest for instruction, rest in docker if instruction == "COPY"]
    assert any(c.startswith("--from=build ") and "ctxscribe-server" in c for c in copies)
    # The models come from the build stage, verified there: nothing is fetched at run time.
    runtime = docker[[i for i, (ins, _) in enumerate(docker) if ins == "FROM"][1] :]
    assert not any("prepare-models" in rest or "fetch" in rest for _, rest in runtime)
    (check,) = [rest for instruction, rest in docker if instruction == "HEALTHCHECK"]
    assert "/health" in check


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def healthcheck_command() -> list[str]:
    docker = dockerfile_instructions()
    (check,) = [rest for instruction, rest in docker if instruction == "HEALTHCHECK"]
    command: list[str] = json.loads(check.split("CMD", 1)[1])
    return command


def test_server_runs_with_the_deployment_and_the_image_healthcheck(
    manifests: dict[str, dict[str, Any]], tiny_model: Path, tmp_path: Path
) -> None:
    """The Deployment's arguments and environment start the real server (local paths and
    a free loopback port swapped in), and the image's HEALTHCHECK command probes it."""
    keys = tmp_path / "keys"
    keys.write_text(manifests["Secret"]["stringData"]["keys"], encoding="utf-8")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXSCRIBE_")}
    env.update(env_of(manifests))
    env.update(CTXSCRIBE_MODEL=str(tiny_model), CTXSCRIBE_API_KEY_FILE=str(keys))
    args = list(container(manifests)["args"])
    args[args.index("--port") + 1] = str(port)
    args[args.index("--host") + 1] = "127.0.0.1"
    check = healthcheck_command()
    probe_env = {**os.environ, "CTXSCRIBE_PORT": str(port)}
    assert subprocess.run(check, env=probe_env, check=False).returncode != 0, "nothing listens yet"
    server = subprocess.Popen([str(server_binary()), *args], env=env, stderr=subprocess.PIPE)
    try:
        health = wait_for_health(port, server)
        assert health["auth"] is True, health
        assert health["max_concurrent"] == int(env["CTXSCRIBE_MAX_CONCURRENT"]), health
        assert health["max_queue"] == int(env["CTXSCRIBE_MAX_QUEUE"]), health
        done = subprocess.run(check, env=probe_env, capture_output=True, text=True, check=False)
        assert done.returncode == 0, (shlex.join(check), done.stderr)
        server.terminate()
        assert server.wait() == 0, "the server drains and exits 0 on SIGTERM"
        assert subprocess.run(check, env=probe_env, check=False).returncode != 0
    finally:
        server.kill()
        server.wait()


def wait_for_health(port: int, server: subprocess.Popen[bytes]) -> dict[str, Any]:
    for _ in range(1200):
        assert server.poll() is None, server.stderr.read() if server.stderr else b""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health") as answer:
                health: dict[str, Any] = json.load(answer)
                return health
        except OSError:
            time.sleep(0.1)
    raise AssertionError("the server never answered /health")


def debian_package(library: Path) -> str:
    """The Debian package that holds a shared library (dpkg -S; usrmerge aware)."""
    for candidate in (library, Path("/usr") / library.relative_to("/"), library.resolve()):
        done = subprocess.run(
            ["dpkg", "-S", str(candidate)], capture_output=True, text=True, check=False
        )
        if done.returncode == 0:
            return done.stdout.split(":", 1)[0]
    raise AssertionError(f"no Debian package holds {library}")


def test_runtime_stage_installs_the_binarys_libraries() -> None:
    """Every shared library the server links comes from a package the runtime stage
    installs, or from libc6 / libgcc-s1 (in every Debian image)."""
    linked = subprocess.run(
        ["ldd", str(server_binary())], capture_output=True, text=True, check=True
    ).stdout
    libraries = [Path(p) for p in re.findall(r"=> (/\S+)", linked)]
    assert libraries, linked
    docker = dockerfile_instructions()
    runtime = docker[[i for i, (ins, _) in enumerate(docker) if ins == "FROM"][1] :]
    installs = " ".join(rest for instruction, rest in runtime if instruction == "RUN")
    (listed,) = re.findall(r"--no-install-recommends ([a-z0-9+.\- ]+?)(?: &&|$)", installs)
    packages = set(listed.split())
    assert "tini" in packages, packages
    for library in libraries:
        package = debian_package(library)
        assert package in packages | {"libc6", "libgcc-s1"}, (library, package, packages)
