"""The images the chart deploys, checked statically (`make images` builds them for real): the
engine-image/ and operator/ Dockerfiles parsed; bases that are the local images images.sh makes,
the wheel built in a stage with the compiler and the final stages without, non-root users,
entrypoints that are the installed console scripts and match the commands the operator and the
chart give, a worker without the dependencies only the operator imports, COPY sources that exist
and that .dockerignore lets into the build context."""

from __future__ import annotations

import ast
import fnmatch
import json
import re
import shlex
import tomllib
from dataclasses import dataclass, field
from importlib.metadata import distribution
from pathlib import Path

import pytest
from helm_chart import container, render
from streamshift_engine.cli import build_parser
from streamshift_operator.resources.pods import WORKER_COMMAND

REPO = Path(__file__).resolve().parents[2]
VERSION = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
NAMED_CONTEXTS = {"spark-jars"}  # given with `podman build --build-context` (e2e/kind/images.sh)


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def all(self, keyword: str) -> list[str]:
        return [args for key, args in self.instructions if key == keyword]


def stages(dockerfile: Path) -> list[Stage]:
    """The build stages: each FROM and its instructions (continuations joined, comments out)."""
    text = re.sub(r"\\\n", " ", dockerfile.read_text())
    found: list[Stage] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        keyword, _, args = line.partition(" ")
        if keyword.upper() == "FROM":
            parts = args.split()
            found.append(Stage(parts[0], parts[2] if len(parts) == 3 else None))
        elif found:  # before the first FROM: the global ARGs (args_of reads them)
            found[-1].instructions.append((keyword.upper(), args.strip()))
    return found


def included(path: str) -> bool:
    """Whether .dockerignore lets PATH into the build context (last matching rule wins)."""
    keep = True
    for rule in (REPO / ".dockerignore").read_text().splitlines():
        rule = rule.strip()
        if not rule or rule.startswith("#"):
            continue
        negated, pattern = rule.startswith("!"), rule.lstrip("!")
        parts = Path(path).parts
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        if pattern == "**" or any(fnmatch.fnmatch(p, pattern) for p in prefixes):
            keep = negated
    return keep


def copies(stage: Stage) -> list[tuple[str | None, list[str]]]:
    """(--from value or None, sources) of each COPY of STAGE."""
    found = []
    for args in stage.all("COPY"):
        words = shlex.split(args)
        source = next((w.split("=", 1)[1] for w in words if w.startswith("--from=")), None)
        paths = [w for w in words if not w.startswith("--")]
        found.append((source, paths[:-1]))
    return found


DOCKERFILES = [REPO / "engine-image/Dockerfile", REPO / "operator/Dockerfile"]
IMAGES_SH = (REPO / "e2e/kind/images.sh").read_text()


def final_stages(dockerfile: Path) -> list[Stage]:
    """The stages an image is tagged from: those on the runtime base."""
    return [s for s in stages(dockerfile) if s.base == "${PYTHON}"]


def args_of(dockerfile: Path) -> dict[str, str]:
    lines = dockerfile.read_text().splitlines()
    return dict(line[4:].split("=", 1) for line in lines if line.startswith("ARG ") and "=" in line)


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.parent.name)
def test_bases_are_the_local_python_images_and_only_the_build_stage_compiles(
    dockerfile: Path,
) -> None:
    defaults = args_of(dockerfile)
    built = dict(re.findall(r"^(PYTHON(?:_BUILD)?)_IMAGE=(\S+)$", IMAGES_SH, re.M))
    suite = re.search(r"^DEBIAN_SUITE=(\w+)", (REPO / "e2e/kind/versions.sh").read_text(), re.M)
    assert suite is not None
    for arg in ("PYTHON", "PYTHON_BUILD"):
        assert defaults[arg] == built[arg].replace("$DEBIAN_SUITE", suite.group(1))
        assert f'--build-arg "{arg}=${arg}_IMAGE"' in IMAGES_SH
    all_stages = stages(dockerfile)
    assert all_stages[0].base == "${PYTHON_BUILD}"
    assert any("pip wheel" in run for run in all_stages[0].all("RUN"))
    finals = final_stages(dockerfile)
    assert finals and all(not any("gcc" in r for r in s.all("RUN")) for s in finals)
    for stage in finals:  # the venv comes ready-made from a build stage
        assert any(src and paths == ["/opt/venv"] for src, paths in copies(stage)), stage.name


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.parent.name)
def test_the_images_run_as_a_non_root_user(dockerfile: Path) -> None:
    for final in final_stages(dockerfile):
        [user] = final.all("USER")
        uid = user.split(":")[0]
        assert uid.isdigit() and int(uid) != 0
        assert any(f"--uid {uid}" in run for run in final.all("RUN"))
        keys = [key for key, _ in final.instructions]
        assert keys.index("USER") > max(i for i, k in enumerate(keys) if k == "RUN")


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.parent.name)
def test_copy_sources_exist_and_are_in_the_build_context(dockerfile: Path) -> None:
    built = stages(dockerfile)
    names = {s.name for s in built if s.name}
    for stage in built:
        for source, paths in copies(stage):
            if source is not None:
                assert source in names | NAMED_CONTEXTS, source
                continue
            for path in paths:
                assert (REPO / path).exists(), path
                assert included(path), f"{path} is excluded by .dockerignore"
    assert not included(".venv/bin/python") and not included("tests/operator")


def test_worker_entrypoint_is_the_console_script_the_operator_runs() -> None:
    worker = {s.name: s for s in stages(REPO / "engine-image/Dockerfile")}["worker"]
    [entrypoint] = worker.all("ENTRYPOINT")
    argv = json.loads(entrypoint)
    assert tuple(argv) == WORKER_COMMAND
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts[argv[0]] == "streamshift_engine.cli:main"
    assert build_parser().parse_args(argv[1:]).command == "worker"
    assert not any("openjdk" in run or "spark" in run for run in worker.all("RUN"))


def test_the_worker_leaves_out_only_packages_the_engine_never_imports() -> None:
    """The worker venv installs the wheel with pyproject's `engine` extra only, so the packages the
    other roles' extras add are left out; no non-Spark engine module imports one of them (the
    image build imports every such module as well)."""
    venv = {s.name: s for s in stages(REPO / "engine-image/Dockerfile")}["worker-venv"]
    assert any('.whl)[engine]"' in run for run in venv.all("RUN"))
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]

    def packages(role: str) -> set[str]:
        named = (re.split(r"[=<>!~ \[]", r)[0].lower() for r in extras[role])
        return {name for name in named if name != "streamshift"}

    left_out = set().union(*(packages(role) for role in extras)) - packages("engine")
    assert {"kopf", "kubernetes", "pydantic", "matplotlib", "pyspark"} <= left_out
    engine = REPO / "engine-image/streamshift_engine"
    for module in engine.rglob("*.py"):
        if "spark" in module.relative_to(engine).parts:
            continue
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            assert not {n.split(".")[0] for n in names} & left_out, module


def test_spark_image_has_pyspark_a_jre_and_the_entrypoint_spark_pods_call() -> None:
    spark = {s.name: s for s in stages(REPO / "engine-image/Dockerfile")}["spark"]
    assert any("openjdk-17-jre-headless" in run for run in spark.all("RUN"))
    venv = {s.name: s for s in stages(REPO / "engine-image/Dockerfile")}["spark-venv"]
    assert any('.whl)[spark]"' in run for run in venv.all("RUN"))
    assert json.loads(spark.all("ENTRYPOINT")[0]) == ["/opt/entrypoint.sh"]
    assert (None, ["deploy/spark/image-entrypoint.sh"]) in copies(spark)
    entrypoint = (REPO / "deploy/spark/image-entrypoint.sh").read_text()
    assert "driver)" in entrypoint and "executor)" in entrypoint
    assert "KubernetesExecutorBackend" in entrypoint


def test_operator_entrypoint_is_kopf_as_the_chart_runs_it() -> None:
    [final] = final_stages(REPO / "operator/Dockerfile")
    [entrypoint] = final.all("ENTRYPOINT")
    argv = json.loads(entrypoint)
    kopf = distribution("kopf").entry_points.select(group="console_scripts", name=argv[0])
    assert [e.value for e in kopf] == ["kopf.cli:main"]
    command = container(render())["command"]
    flags = [a for a in command if not a.startswith("--liveness")]
    assert flags == argv  # the chart adds only the liveness endpoint
