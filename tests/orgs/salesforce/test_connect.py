"""Connecting to an org: option resolution (flags > environment > .env), the three login ways, and secrets that
never reach a message. Logins go through the real simple-salesforce client over real sockets to the embedded
org (token and SOAP password logins) or to a closed local port (JWT: the token exchange fails to connect)."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orgs.local import LocalServer, disconnect, server_for
from orgs.salesforce.connect import ENV, REDACTED, OrgConnectError, OrgOptions, connect
from schemas.errors import UsageError
from tests.conftest import copy_bundle

TOKEN = "tok-SECRET-0123456789abcdef"


@pytest.fixture(scope="module")
def server(small_bundle: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    bundle = copy_bundle(small_bundle, tmp_path_factory.mktemp("connect") / "bundle")
    srv = server_for(bundle)
    yield srv
    disconnect(bundle)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_flags_beat_environment_beat_dotenv(tmp_path: Path) -> None:
    dot = tmp_path / ".env"
    dot.write_text("SF_INSTANCE_URL=https://dot.example\nSF_ACCESS_TOKEN=dot-token\nSF_DOMAIN=test\n")
    env = {"SF_INSTANCE_URL": "https://env.example", "SF_ACCESS_TOKEN": "env-token"}
    opts = OrgOptions.resolve({"instance_url": "https://flag.example"}, environ=env, dotenv=dot)
    assert (opts.instance_url, opts.access_token, opts.domain) == (
        "https://flag.example",
        "env-token",
        "test",
    )
    assert opts.source("instance_url") == "--instance-url"
    assert opts.source("access_token") == "$SF_ACCESS_TOKEN"
    assert opts.source("domain") == f"SF_DOMAIN in {dot}"
    assert opts.method() == "token"


def test_every_variable_is_read_from_the_environment() -> None:
    env = {var: f"v-{name}" for name, var in ENV.items()}
    opts = OrgOptions.resolve(environ=env, dotenv=None)
    assert {name: getattr(opts, name) for name in ENV} == {name: f"v-{name}" for name in ENV}


def test_missing_dotenv_is_skipped_unless_required(tmp_path: Path) -> None:
    assert OrgOptions.resolve(environ={}, dotenv=tmp_path / "nope").instance_url is None
    with pytest.raises(UsageError, match=r"no such \.env file"):
        OrgOptions.resolve(environ={}, dotenv=tmp_path / "nope", dotenv_required=True)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({}, "No org given"),
        ({"access_token": TOKEN}, "needs --instance-url"),
        ({"username": "u", "consumer_key": "k"}, "needs --private-key-file"),
        ({"access_token": TOKEN, "password": "pw-SECRET"}, "more than one login way"),
        ({"instance_url": "http://plain.example", "access_token": TOKEN}, "must be an https:// URL"),
        ({"username": "u", "consumer_key": "k", "private_key_file": "/nonexistent/key.pem"}, "is not a file"),
    ],
)
def test_incomplete_or_contradictory_options_are_refused(flags: dict[str, str], message: str) -> None:
    opts = OrgOptions.resolve(flags, environ={}, dotenv=None)
    with pytest.raises(OrgConnectError, match=message) as caught:
        opts.method()
    assert caught.value.exit_code == 2
    assert TOKEN not in str(caught.value) and "pw-SECRET" not in str(caught.value)


def test_repr_and_describe_hide_secrets() -> None:
    opts = OrgOptions.resolve(
        {"username": "me@x", "password": "pw-SECRET", "security_token": "st-SECRET"}, environ={}, dotenv=None
    )
    for text in (repr(opts), opts.describe(), str(opts.public())):
        assert "SECRET" not in text
    assert opts.describe() == "me@x at login (password)"


SECRET_CHARS = st.text(alphabet="abc0123XYZ", min_size=1, max_size=12)


@given(SECRET_CHARS, SECRET_CHARS, SECRET_CHARS, st.text(alphabet=" .:/=\n{}", max_size=20))
def test_redact_leaves_no_secret(password: str, token: str, access: str, text: str) -> None:
    opts = OrgOptions(password=password, security_token=token, access_token=access)
    out = opts.redact(text + password + token + text + access + password + text)
    assert password not in out and token not in out and access not in out
    # only secrets were replaced: the text between them (no secret characters) is kept whole, in order
    kept = "".join(c for c in out.replace(REDACTED, "") if c not in "abc0123XYZ")
    assert kept == text * 3


def test_token_login_against_the_embedded_org(server: LocalServer) -> None:
    opts = OrgOptions.resolve(
        environ={"SF_INSTANCE_URL": server.url, "SF_ACCESS_TOKEN": server.token}, dotenv=None
    )
    sf = connect(opts, session=server.session())
    assert sf.query("SELECT COUNT() FROM Account")["totalSize"] > 0


def test_password_login_against_the_embedded_org(server: LocalServer, tmp_path: Path) -> None:
    dot = tmp_path / ".env"
    dot.write_text(
        f"SF_USERNAME=admin@orgseed.local\nSF_PASSWORD={server.token[:8]}\nSF_SECURITY_TOKEN={server.token[8:]}\n"
        f"SF_DOMAIN=127.0.0.1:{server.port}/services/Soap/u/59.0?x=\n"
    )
    sf = connect(OrgOptions.resolve(environ={}, dotenv=dot), session=server.session())
    assert sf.session_id == server.token


def test_refused_logins_are_redacted(server: LocalServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    bad = OrgOptions.resolve({"instance_url": server.url, "access_token": TOKEN}, environ={}, dotenv=None)
    with pytest.raises(OrgConnectError, match="Cannot log in") as caught:
        connect(bad, session=server.session())
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    wrong = OrgOptions.resolve(
        {
            "username": "admin@orgseed.local",
            "password": "pw-SECRET",
            "security_token": "st-SECRET",
            "domain": f"127.0.0.1:{server.port}/services/Soap/u/59.0?x=",
        },
        environ={},
        dotenv=None,
    )
    with pytest.raises(OrgConnectError, match="INVALID_LOGIN") as refused:
        connect(wrong, session=server.session())
    for text in (str(caught.value), str(refused.value), caplog.text):
        assert TOKEN not in text and "SECRET" not in text


def test_jwt_login_failure_names_no_secret(tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = tmp_path / "server.key"
    pem.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    opts = OrgOptions.resolve(
        {
            "username": "me@x",
            "consumer_key": "ck-SECRET-3MVG9",
            "private_key_file": str(pem),
            "domain": f"127.0.0.1:{closed_port()}/x?",
        },
        environ={},
        dotenv=None,
    )
    assert opts.method() == "jwt"
    with pytest.raises(OrgConnectError, match="JWT bearer") as caught:
        connect(opts)
    assert "SECRET" not in str(caught.value)
