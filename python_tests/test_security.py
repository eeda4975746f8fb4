"""No credentials in the repository; the cluster target takes every secret from the environment.

(That the local Thrift server listens on 127.0.0.1 only is python_tests/test_harness.py.)
"""

from __future__ import annotations

import re
import subprocess

import pytest
import yaml

from harness.dbt import PROFILES_DIR, REPO_ROOT, DbtProject, environment
from harness.thrift_server import free_port

SECRET_KEY = r"(?:password|passwd|pwd|token|secret|api[_-]?key|access[_-]?key|private[_-]?key|client[_-]?secret)"
# `key: value` / `key = value` / `KEY=value` with a literal value (quoted or bare).
ASSIGNMENT = re.compile(
    rf"""(?ix) (?P<key>[\w.-]*{SECRET_KEY}[\w.-]*) ["']? \s* [:=] \s* (?P<value>"[^"]*"|'[^']*'|[^\s,#]+)"""
)
# Formats of real credentials, wherever they appear.
TOKEN_FORMATS = {
    "private key": re.compile(r"-----BEGIN (?:RSA |EC |DSA |OPENSSH )?PRIVATE KEY-----"),
    "AWS access key": re.compile(r"\bAKIA[0-9A-Z]{16}\b"),
    "GitHub token": re.compile(r"\bgh[pousr]_[A-Za-z0-9]{36,}\b"),
    "Databricks token": re.compile(r"\bdapi[0-9a-f]{32}\b"),
    "Slack token": re.compile(r"\bxox[abprs]-[0-9A-Za-z-]{10,}"),
}
# Values that are not secrets: empty, placeholders, references to the environment or to code.
HARMLESS_VALUE = re.compile(
    r"""(?ix) ^["']?( | \.\.\.+ | <[^>]*> | \*+ | none | null | true | false
        | \{\{.*env_var\(.*\}\}.* | \$\{?\w+\}? | os\.environ.* | env_var\(.* )["']?$"""
)
# Files whose assignments are configuration (a literal there would be a stored credential).
CONFIG_SUFFIXES = {".yml", ".yaml", ".cfg", ".ini", ".conf", ".env", ".properties", ".toml", ".json", ".sh"}


def repository_files() -> list[str]:
    """Tracked files plus new files that are not git-ignored: what a commit would contain."""
    listing = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=REPO_ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return [path for path in listing.split("\0") if path and (REPO_ROOT / path).is_file()]


def secrets_in(text: str, config_file: bool) -> list[str]:
    found = [f"{kind}" for kind, pattern in TOKEN_FORMATS.items() if pattern.search(text)]
    if config_file:
        for match in ASSIGNMENT.finditer(text):
            if not HARMLESS_VALUE.match(match.group("value")):
                found.append(f"{match.group('key')} = {match.group('value')[:4]}...")
    return found


@pytest.mark.parametrize(
    ("text", "config_file", "expected"),
    [
        ("password: hunter2", True, True),
        ('"token": "abc123def"', True, True),
        ("JOINERY_CLUSTER_PASSWORD=s3cret", True, True),
        ("aws = AKIA" + "ABCDEFGHIJKLMNOP", False, True),  # split: this file must pass its own scan
        ("-----BEGIN RSA PRIVATE" + " KEY-----", False, True),
        ("password: \"{{ env_var('JOINERY_CLUSTER_PASSWORD', '') }}\"", True, False),
        ("token: ''", True, False),
        ("JOINERY_CLUSTER_PASSWORD=...   # placeholder", True, False),
        ("password=password  # a Python keyword argument", False, False),
    ],
)
def test_the_scanner_finds_secrets_and_only_secrets(text, config_file, expected):
    assert bool(secrets_in(text, config_file)) is expected, secrets_in(text, config_file)


def test_no_credentials_in_repository_files():
    files = repository_files()
    assert "profiles/profiles.yml" in files and "dbt_project.yml" in files
    leaks = {}
    for path in files:
        try:
            text = (REPO_ROOT / path).read_text()
        except UnicodeDecodeError:
            continue
        config_file = any(path.endswith(suffix) for suffix in CONFIG_SUFFIXES) or "/." in f"/{path}"
        found = secrets_in(text, config_file)
        if found:
            leaks[path] = found
    assert not leaks, f"credentials in repository files (use env_var() / environment variables): {leaks}"


CLUSTER_SECRETS = {"password": "JOINERY_CLUSTER_PASSWORD", "token": "JOINERY_CLUSTER_TOKEN"}


def test_cluster_target_reads_every_setting_from_the_environment():
    outputs = yaml.safe_load((PROFILES_DIR / "profiles.yml").read_text())["joinery"]["outputs"]
    cluster = outputs["cluster"]
    fixed = {"type", "connect_timeout", "poll_interval", "query_retries", "server_side_parameters"}
    for key, value in cluster.items():
        if key in fixed:
            continue
        assert isinstance(value, str) and "env_var('JOINERY_CLUSTER_" in value, f"cluster.{key} = {value!r}"
    for key, variable in CLUSTER_SECRETS.items():
        # No default but "unset" (None: PyHive refuses an empty password with auth NONE).
        assert re.fullmatch(rf"\{{\{{ env_var\('{variable}', ''\) or none \}}\}}", cluster[key]), cluster[key]
    for name, target in outputs.items():
        for key in ("password", "token"):
            assert key not in target or "env_var(" in str(target[key]), f"{name}.{key} is a literal"


def render_cluster_profile() -> dict:
    """The cluster output as dbt renders it, from the current environment."""
    import os

    from dbt.config.renderer import ProfileRenderer
    from dbt_common.context import set_invocation_context

    set_invocation_context(os.environ)
    raw = yaml.safe_load((PROFILES_DIR / "profiles.yml").read_text())["joinery"]["outputs"]["cluster"]
    return ProfileRenderer({}).render_data(raw)


def test_cluster_credentials_render_from_the_environment():
    with environment(
        JOINERY_CLUSTER_HOST="spark.example.internal",
        JOINERY_CLUSTER_PASSWORD="from-the-environment",
        JOINERY_CLUSTER_TOKEN="token-from-the-environment",
        JOINERY_CLUSTER_USER="etl",
    ):
        rendered = render_cluster_profile()
    assert rendered["host"] == "spark.example.internal"
    assert rendered["password"] == "from-the-environment"
    assert rendered["token"] == "token-from-the-environment"
    assert rendered["user"] == "etl"
    with environment(JOINERY_CLUSTER_HOST="h", JOINERY_CLUSTER_PASSWORD=None, JOINERY_CLUSTER_TOKEN=None):
        unset = render_cluster_profile()
    assert unset["password"] is None and unset["token"] is None
    assert unset["use_ssl"] is False and unset["port"] == 10000


@pytest.mark.parametrize(("value", "expected"), [("true", True), ("True", True), ("false", False), ("0", False)])
def test_cluster_use_ssl_renders_as_a_boolean(value, expected):
    with environment(JOINERY_CLUSTER_HOST="h", JOINERY_CLUSTER_USE_SSL=value):
        assert render_cluster_profile()["use_ssl"] is expected


def test_cluster_target_configured_from_the_environment_reaches_the_server(minimal_project, tmp_path):
    """With only host and port set (auth NONE), the profile is accepted and dbt tries to connect:
    no unused password or Kerberos setting makes PyHive refuse it before that."""
    port = free_port()  # nothing listens: the connection attempt itself must be what fails
    project = DbtProject(
        project_dir=minimal_project,
        target="cluster",
        target_path=tmp_path / "target",
        env={
            "JOINERY_CLUSTER_HOST": "127.0.0.1",
            "JOINERY_CLUSTER_PORT": str(port),
            "JOINERY_CLUSTER_CONNECT_RETRIES": "0",
        },
    )
    message = project.invoke("show", "--inline", "select 1 as one", expect_success=False).messages
    assert "Could not connect to any of [('127.0.0.1', " + str(port) in message, message
