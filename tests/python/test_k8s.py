"""compose/k8s, checked offline and without the Swift executables: every manifest validates
strictly against the Kubernetes schemas kubernetes-validate ships (no network: connecting is
refused while it runs), and the manifests say what compose/docker-compose.yml says, read at
test time: the same four parts, commands, HOMEPWNER_* variables (modulo the host of
tcp://HOST:PORT), health checks, grace period; services single-writer StatefulSets of one
replica with a claim at /data; every HOMEPWNER_* name one the code reads."""

from __future__ import annotations

import re
import socket
from pathlib import Path

import pytest
import yaml

from conftest import COMPOSE, DOCKERFILE, REPO_ROOT, compose_mounts, compose_secrets, default_stack

K8S = REPO_ROOT / "compose" / "k8s"
# The oldest Kubernetes the manifests claim to fit, and the newest the pinned package bundles.
K8S_VERSIONS = ("1.30.0", "1.35.0")
SERVICES = ("item-service", "image-service")
WORKERS = ("capture-worker", "thumbnail-worker")


def manifest_files() -> list[Path]:
    return sorted(p for p in K8S.glob("*.yaml") if p.name != "kustomization.yaml")


def load_all() -> list[dict]:
    return [doc for path in manifest_files() for doc in yaml.safe_load_all(path.read_text()) if doc]


@pytest.fixture(scope="module")
def compose_file() -> dict:
    return default_stack(yaml.safe_load(COMPOSE.read_text()))


@pytest.fixture(scope="module")
def compose() -> dict:
    """The services `docker compose up` starts: the backup profile's has no part in compose/k8s."""
    return default_stack(yaml.safe_load(COMPOSE.read_text()))["services"]


@pytest.fixture(scope="module")
def resources() -> list[dict]:
    return load_all()


def workload(resources: list[dict], name: str) -> dict:
    found = [r for r in resources if r["kind"] in ("StatefulSet", "Deployment") and r["metadata"]["name"] == name]
    assert len(found) == 1, f"{name}: {len(found)} workloads"
    return found[0]


def container(resources: list[dict], name: str) -> dict:
    containers = workload(resources, name)["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1, name
    return containers[0]


def without_hosts(value: str) -> str:
    return re.sub(r"tcp://[*A-Za-z0-9_.-]+:(\d+)", r"tcp://HOST:\1", value)


@pytest.fixture
def no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("kubernetes-validate tried to reach the network")
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


def test_k8s_kustomization_lists_every_manifest():
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    assert kustomization["kind"] == "Kustomization"
    assert "namespace" not in kustomization, "the manifests are namespace-agnostic"
    assert sorted(kustomization["resources"]) == [p.name for p in manifest_files()]
    for resource in load_all():
        assert "namespace" not in resource["metadata"], resource["metadata"]["name"]


@pytest.mark.parametrize("version", K8S_VERSIONS)
@pytest.mark.parametrize("path", manifest_files(), ids=lambda p: p.name)
def test_k8s_manifest_validates_strictly_offline(path, version, no_network):
    import kubernetes_validate

    documents = [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
    assert documents, path
    for document in documents:
        try:
            kubernetes_validate.validate(document, version, strict=True)
        except kubernetes_validate.ValidationError as error:
            where = ".".join(str(part) for part in error.path)
            pytest.fail(f"{path.name}: {document['kind']}/{document['metadata']['name']}: {where}: {error.message}")


def test_k8s_validation_refuses_a_broken_manifest(no_network):
    """The check above can fail: an unknown field and a wrong type are refused."""
    import kubernetes_validate

    document = next(yaml.safe_load_all((K8S / "item-service.yaml").read_text()))
    for broken in ({**document, "spec": {**document["spec"], "replicaz": 1}},
                   {**document, "spec": {**document["spec"], "replicas": "one"}}):
        with pytest.raises(kubernetes_validate.ValidationError):
            kubernetes_validate.validate(broken, K8S_VERSIONS[0], strict=True)


def test_k8s_has_the_same_four_parts_as_compose(compose, resources):
    kinds = {r["metadata"]["name"]: r["kind"] for r in resources if r["kind"] in ("StatefulSet", "Deployment")}
    assert set(kinds) == set(compose)
    assert {name: kinds[name] for name in SERVICES} == {name: "StatefulSet" for name in SERVICES}
    assert {name: kinds[name] for name in WORKERS} == {name: "Deployment" for name in WORKERS}


@pytest.mark.parametrize("name", SERVICES + WORKERS)
def test_k8s_part_runs_the_compose_command_and_environment(name, compose, resources):
    service = compose[name]
    spec = container(resources, name)
    assert "command" not in spec, "args, like compose's command, leave the image's entrypoint alone"
    assert spec["args"] == service["command"]
    env = {e["name"]: e["value"] for e in spec.get("env", [])}
    assert len(env) == len(spec.get("env", [])), f"{name}: a variable set twice"
    expected = {k: without_hosts(str(v)) for k, v in service.get("environment", {}).items() if k.startswith("HOMEPWNER_")}
    assert {k: without_hosts(v) for k, v in env.items()} == expected
    # The thumbnail workers run the Dockerfile's media stage (FFmpeg's libraries, for movie posters).
    assert spec["image"] == service["image"] == ("homepwner-media:latest" if name == "thumbnail-worker" else "homepwner:latest")
    assert spec["imagePullPolicy"] == "IfNotPresent"


def seconds(duration: str) -> int:
    match = re.fullmatch(r"(?:(\d+)m)?(?:(\d+)s)?", str(duration))
    assert match and any(match.groups()), duration
    return int(match.group(1) or 0) * 60 + int(match.group(2) or 0)


@pytest.mark.parametrize("name", SERVICES + WORKERS)
def test_k8s_probes_run_the_compose_health_check(name, compose, resources):
    check = compose[name]["healthcheck"]
    assert check["test"][0] == "CMD"
    spec = container(resources, name)
    probes = {kind: spec[kind] for kind in ("startupProbe", "readinessProbe", "livenessProbe") if kind in spec}
    assert {"readinessProbe", "livenessProbe"} <= set(probes), name
    for kind, probe in probes.items():
        assert probe["exec"]["command"] == check["test"][1:], f"{name} {kind}"
        assert probe["timeoutSeconds"] == seconds(check["timeout"]), f"{name} {kind}"
    for kind in ("readinessProbe", "livenessProbe"):
        assert probes[kind]["periodSeconds"] == seconds(check["interval"]), f"{name} {kind}"
        assert probes[kind]["failureThreshold"] == check["retries"], f"{name} {kind}"


@pytest.mark.parametrize("name", SERVICES + WORKERS)
def test_k8s_grace_period_is_compose_stop_grace_period(name, compose, resources):
    pod = workload(resources, name)["spec"]["template"]["spec"]
    assert pod["terminationGracePeriodSeconds"] == seconds(compose[name]["stop_grace_period"])


def code_reads(variable: str) -> bool:
    quoted = f'"{variable}"'
    return any(quoted in path.read_text(errors="replace") for path in (REPO_ROOT / "Sources").rglob("*.swift"))


def test_k8s_and_compose_use_only_variables_the_code_reads(compose, resources):
    names = {e["name"] for name in SERVICES + WORKERS for e in container(resources, name).get("env", [])}
    names |= {k for service in compose.values() for k in service.get("environment", {})}
    homepwner = {n for n in names if n.startswith("HOMEPWNER_")}
    assert homepwner == names, f"not HOMEPWNER_*: {names - homepwner}"
    unread = sorted(n for n in homepwner if not code_reads(n))
    assert not unread, f"no Swift source reads {unread}"


@pytest.mark.parametrize("name", SERVICES)
def test_k8s_service_is_a_single_writer_statefulset_with_a_claim_at_data(name, resources):
    spec = workload(resources, name)["spec"]
    assert spec["replicas"] == 1
    assert spec["updateStrategy"]["type"] == "RollingUpdate"
    assert spec.get("podManagementPolicy", "OrderedReady") == "OrderedReady"
    assert spec["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Retain", "whenScaled": "Retain"}
    claims = {claim["metadata"]["name"]: claim for claim in spec["volumeClaimTemplates"]}
    mounts = {m["mountPath"]: m["name"] for m in container(resources, name)["volumeMounts"]}
    assert mounts.get("/data") in claims, f"{name}: /data is not a volume claim"
    assert claims[mounts["/data"]]["spec"]["accessModes"] == ["ReadWriteOnce"]
    env = {e["name"]: e["value"] for e in container(resources, name)["env"]}
    assert env["HOMEPWNER_DATA_DIR"] == "/data"


@pytest.mark.parametrize("name", SERVICES)
def test_k8s_service_exposes_the_ports_and_name_clients_connect_to(name, compose, resources):
    binds = sorted(int(port) for value in compose[name]["environment"].values()
                   for port in re.findall(r"tcp://\*:(\d+)", str(value)))
    services = [r for r in resources if r["kind"] == "Service" and r["metadata"]["name"] == name]
    assert len(services) == 1, name
    service = services[0]["spec"]
    assert sorted(p["port"] for p in service["ports"]) == binds
    pod = workload(resources, name)["spec"]["template"]
    assert all(pod["metadata"]["labels"].get(k) == v for k, v in service["selector"].items())
    named = {p["name"]: p["containerPort"] for p in container(resources, name)["ports"]}
    for port in service["ports"]:
        assert named.get(port["targetPort"], port["targetPort"]) == port["port"], port
    # Every tcp://HOST:PORT another part connects to names a Service that serves that port.
    served = {(r["metadata"]["name"], p["port"]) for r in resources if r["kind"] == "Service" for p in r["spec"]["ports"]}
    for part in SERVICES + WORKERS:
        for e in container(resources, part).get("env", []):
            for host, port in re.findall(r"tcp://([A-Za-z][A-Za-z0-9_.-]*):(\d+)", e["value"]):
                assert (host, int(port)) in served, f"{part}: {e['name']}={e['value']}"


@pytest.mark.parametrize("name", SERVICES + WORKERS)
def test_k8s_part_mounts_what_compose_mounts(name, compose, resources):
    spec = container(resources, name)
    # /tmp: the read-only root's scratch space; /run/secrets: compose's secrets (the next test).
    mounts = {m["mountPath"]: m for m in spec.get("volumeMounts", []) if m["mountPath"] not in ("/tmp", "/run/secrets")}
    expected = compose_mounts(compose[name])
    assert set(mounts) == set(expected), name
    for target, (_, read_only) in expected.items():
        assert mounts[target].get("readOnly", False) == read_only, f"{name} {target}"


@pytest.mark.parametrize("name", SERVICES + WORKERS)
def test_k8s_part_gets_the_compose_secrets_as_its_own_0600_files(name, compose_file, resources):
    """Each secret compose gives a part (/run/secrets/NAME, from a file of the keys folder) is
    the same file of the Secret homepwner-keys, copied by the init container into an in-memory
    /run/secrets with mode 0600; the keys folder compose mounts at /keys (allowed_keys, the
    servers' public key) is the Secret's same files there."""
    expected = {Path(target).name: Path(source).name
                for target, source in compose_secrets(compose_file, compose_file["services"][name]).items()}
    pod = workload(resources, name)["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    source = volumes["key-source"]["secret"]
    assert source["secretName"] == "homepwner-keys" and source["defaultMode"] == 0o400, source
    assert {item["path"]: item["key"] for item in source["items"]} == expected, name
    assert volumes["secret-files"]["emptyDir"]["medium"] == "Memory"
    [init] = pod["initContainers"]
    assert init["image"] == container(resources, name)["image"]
    assert {m["mountPath"]: m["name"] for m in init["volumeMounts"]} == {"/key-source": "key-source", "/run/secrets": "secret-files"}
    copies = re.findall(r"install -m 0600 /key-source/(\S+) /run/secrets/(\S+)", init["command"][-1])
    assert sorted(copies) == sorted((n, n) for n in expected), init["command"]
    mounts = {m["mountPath"]: m for m in container(resources, name)["volumeMounts"]}
    assert mounts["/run/secrets"]["name"] == "secret-files" and mounts["/run/secrets"].get("readOnly") is True
    keys_folder = {target for target, (source, _) in compose_mounts(compose_file["services"][name]).items() if source.endswith("keys")}
    if keys_folder:
        assert keys_folder == {"/keys"}
        referenced = {Path(v).name for v in [*compose_file["services"][name]["environment"].values(),
                                             *compose_file["services"][name]["healthcheck"]["test"]]
                      if str(v).startswith("/keys/")}
        projected = {item["path"]: item["key"] for item in volumes[mounts["/keys"]["name"]]["secret"]["items"]}
        assert projected == {f: f for f in referenced}, name
    else:
        assert "/keys" not in mounts, name


def test_k8s_photo_library_is_one_shared_readwritemany_claim(compose, compose_file, resources):
    claims = {r["metadata"]["name"]: r for r in resources if r["kind"] == "PersistentVolumeClaim"}
    named = set(compose_file.get("volumes") or {})
    shared = {source for service in compose.values() for source, _ in compose_mounts(service).values()
              if source in named and sum(source in [s for s, _ in compose_mounts(other).values()] for other in compose.values()) > 1}
    assert shared == {"photo-library"}
    for volume in shared:
        assert claims[volume]["spec"]["accessModes"] == ["ReadWriteMany"]
        for name in SERVICES + WORKERS:
            volumes = workload(resources, name)["spec"]["template"]["spec"].get("volumes", [])
            uses = [v for v in volumes if v.get("persistentVolumeClaim", {}).get("claimName") == volume]
            assert bool(uses) == (volume in [s for s, _ in compose_mounts(compose[name]).values()]), name


@pytest.mark.parametrize("name", SERVICES + WORKERS)
def test_k8s_pod_runs_as_the_image_user_never_root(name, resources):
    pod = workload(resources, name)["spec"]["template"]["spec"]
    context = pod["securityContext"]
    assert context["runAsNonRoot"] is True
    assert isinstance(context["runAsUser"], int) and context["runAsUser"] > 0
    spec = container(resources, name)
    assert spec["securityContext"]["allowPrivilegeEscalation"] is False
    # When the Dockerfile fixes its user's UID, it must be the one the pods run as.
    dockerfile = DOCKERFILE.read_text()
    assert re.search(r"^USER\s+homepwner\b|^USER\s+\d+", dockerfile, re.M), "the image runs as root"
    uid = re.search(r"useradd\b[^\n]*--uid[ =](\d+)", dockerfile)
    if uid:
        assert int(uid.group(1)) == context["runAsUser"]
