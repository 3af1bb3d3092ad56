"""Serving: the certificate, loopback only, plain HTTP, and `orgseed serve` end to end."""

from __future__ import annotations

import ipaddress
import json
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import requests
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from simple_salesforce import Salesforce

from orgs.local.serve import LocalServer, check_host, ensure_certificate
from schemas.errors import UsageError
from tests.conftest import copy_bundle
from tests.orgs.local.cli import read_snippet, serve_cli


def test_certificate_is_what_clients_accept(served_bundle: Path, server: LocalServer) -> None:
    assert server.cert_path is not None
    cert = x509.load_pem_x509_certificate(server.cert_path.read_bytes())
    key = cert.public_key()
    assert isinstance(key, ec.EllipticCurvePublicKey) and key.curve.name == "secp256r1"
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert ipaddress.ip_address("127.0.0.1") in san.get_values_for_type(x509.IPAddress)
    assert "localhost" in san.get_values_for_type(x509.DNSName)
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True
    assert (server.cert_path.parent / "key.pem").stat().st_mode & 0o077 == 0
    again = ensure_certificate(served_bundle)
    assert not again.created and again.cert == server.cert_path


def test_certificate_is_trusted_through_requests_ca_bundle(server: LocalServer) -> None:
    """What the snippet tells users to do: REQUESTS_CA_BUNDLE and a plain simple-salesforce client."""
    code = (
        "import sys\n"
        "from simple_salesforce import Salesforce\n"
        f"sf = Salesforce(instance_url='{server.url}', session_id='{server.token}', version='59.0')\n"
        "print(sf.query('SELECT COUNT() FROM Issue__c')['totalSize'])\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.upper().endswith("_PROXY")}
    env["REQUESTS_CA_BUNDLE"] = str(server.cert_path)
    env["NO_PROXY"] = "127.0.0.1,localhost"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.strip()) > 0


def test_untrusted_certificate_is_refused(server: LocalServer) -> None:
    with pytest.raises(requests.exceptions.SSLError):
        requests.get(server.url + "/services/data/", timeout=10, verify=True)


def test_loopback_only() -> None:
    for host in ("0.0.0.0", "192.168.1.5", "example.com", "::"):
        with pytest.raises(UsageError, match="not a loopback address"):
            check_host(host)
    assert check_host("127.0.0.1") == "127.0.0.1"
    assert check_host("localhost") == "localhost"


def test_plain_http_on_request(served_bundle: Path, server: LocalServer) -> None:
    with LocalServer(served_bundle, tls=False, token="plain", org=server.org) as plain:
        assert plain.url.startswith("http://127.0.0.1:")
        r = requests.get(
            plain.url + "/services/data/v59.0/query/",
            params={"q": "SELECT COUNT() FROM Issue__c"},
            headers={"Authorization": "Bearer plain"},
            timeout=10,
        )
        assert r.status_code == 200 and r.json()["totalSize"] > 0
        with pytest.raises(UsageError, match="HTTPS"):
            plain.client()
    # the shared org is still usable by the HTTPS server
    assert server.org.query("SELECT COUNT() FROM Issue__c")["totalSize"] > 0


def test_busy_port_is_a_clear_error(served_bundle: Path, server: LocalServer) -> None:
    with pytest.raises(UsageError, match=f"Cannot listen on 127.0.0.1:{server.port}"):
        LocalServer(served_bundle, port=server.port, org=server.org)


def _serve(bundle: Path, *args: str) -> subprocess.Popen[str]:
    return serve_cli(str(bundle), *args)


def test_cli_serve_end_to_end(small_bundle: Path, tmp_path: Path) -> None:
    bundle = copy_bundle(small_bundle, tmp_path / "bundle")
    proc = _serve(bundle, "--token", "cli-token", "--today", "2024-06-01")
    try:
        url, ca, lines = read_snippet(proc)
        assert url.startswith("https://127.0.0.1:")
        assert any("export ORGSEED_SESSION_ID=cli-token" in line for line in lines)
        session = requests.Session()
        session.verify = ca
        session.trust_env = False
        sf: Any = Salesforce(instance_url=url, session_id="cli-token", session=session)
        assert sf.query("SELECT COUNT() FROM Case")["totalSize"] > 0
        session.close()
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:  # pragma: no cover - a hang is the failure
            proc.kill()
            raise
    assert proc.returncode == 0
    assert "stopped" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--host", "0.0.0.0"], "not a loopback address"),
        (["--today", "June 1st"], "--today must be a date"),
    ],
)
def test_cli_serve_bad_input(small_bundle: Path, tmp_path: Path, args: list[str], message: str) -> None:
    bundle = copy_bundle(small_bundle, tmp_path / "bundle")
    (bundle / "org.sqlite").unlink(missing_ok=True)  # the build's answer check leaves a store behind
    proc = _serve(bundle, *args)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and message in err
    assert not (bundle / "org.sqlite").exists(), "bad input must not touch the bundle"


def test_cli_serve_not_a_bundle(tmp_path: Path) -> None:
    proc = _serve(tmp_path)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and "not an orgseed bundle" in err


def test_connection_close_still_gets_the_whole_response(served_bundle: Path, server: LocalServer) -> None:
    # uvicorn closes the transport right after the last write when the client asks for it
    with (
        LocalServer(served_bundle, tls=False, token="plain", org=server.org) as plain,
        socket.create_connection(("127.0.0.1", plain.port), timeout=10) as sock,
    ):
        sock.sendall(
            b"GET /services/data/v59.0/limits/ HTTP/1.1\r\nHost: localhost\r\n"
            b"Authorization: Bearer plain\r\nConnection: close\r\n\r\n"
        )
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    length = int(re.search(rb"content-length: (\d+)", head, re.IGNORECASE).group(1))  # type: ignore[union-attr]
    assert len(body) == length and "DailyApiRequests" in json.loads(body)
