"""The images the chart deploys, checked statically (no container engine here): engine-image/ and
operator/ Dockerfiles parsed; base images pinned by tag, multi-stage wheel build, a non-root
user, entrypoints that are the installed console scripts and match the commands the operator and
the chart give, COPY sources that exist and that .dockerignore lets into the build context."""

from __future__ import annotations

import fnmatch
import json
import re
import shlex
import tomllib
from dataclasses import dataclass, field
from importlib.metadata import distribution
from pathlib import Path

import pytest
from streamshift_engine.cli import build_parser
from streamshift_operator.pods import WORKER_COMMAND
from test_helm_chart import container, render

REPO = Path(__file__).resolve().parents[2]
VERSION = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
NAMED_CONTEXTS = {"spark-jars"}  # given with `docker build --build-context` (e2e/kind/run.sh)


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
        else:
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


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.parent.name)
def test_bases_are_pinned_and_the_wheel_is_built_in_a_stage_of_its_own(dockerfile: Path) -> None:
    built = stages(dockerfile)
    assert len(built) == 2 and built[0].name == "wheel"
    for stage in built:
        image, _, tag = stage.base.partition(":")
        assert image == "python" and re.fullmatch(r"3\.11\.\d+-slim-\w+", tag), stage.base
    assert any("pip wheel" in run for run in built[0].all("RUN"))
    final = built[-1]
    assert final.all("ARG") == [f"STREAMSHIFT_VERSION={VERSION}"]
    assert any(
        "--find-links /wheels" in r and "==${STREAMSHIFT_VERSION}" in r for r in final.all("RUN")
    )


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.parent.name)
def test_the_image_runs_as_a_non_root_user(dockerfile: Path) -> None:
    final = stages(dockerfile)[-1]
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
    final = stages(REPO / "engine-image/Dockerfile")[-1]
    [entrypoint] = final.all("ENTRYPOINT")
    argv = json.loads(entrypoint)
    assert tuple(argv) == WORKER_COMMAND
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts[argv[0]] == "streamshift_engine.cli:main"
    assert build_parser().parse_args(argv[1:]).command == "worker"
    assert any('"streamshift[spark]==' in run for run in final.all("RUN"))
    assert any("openjdk-17-jre-headless" in run for run in final.all("RUN"))


def test_operator_entrypoint_is_kopf_as_the_chart_runs_it() -> None:
    final = stages(REPO / "operator/Dockerfile")[-1]
    [entrypoint] = final.all("ENTRYPOINT")
    argv = json.loads(entrypoint)
    kopf = distribution("kopf").entry_points.select(group="console_scripts", name=argv[0])
    assert [e.value for e in kopf] == ["kopf.cli:main"]
    command = container(render())["command"]
    flags = [a for a in command if not a.startswith("--liveness")]
    assert flags == argv  # the chart adds only the liveness endpoint
