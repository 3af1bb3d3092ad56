"""Connecting to a Salesforce org: three ways, from flags, the environment or a `.env` file, secrets redacted.

The three ways (issue 12 item 1), chosen by which options are set:

- **token**: instance URL + access (session) token;
- **password**: username + password (+ security token; empty when the network is trusted), SOAP login;
- **jwt**: the OAuth 2.0 JWT bearer flow: username + consumer key + private key file.

Each option is looked up in the flags first, then the environment (`SF_INSTANCE_URL`, `SF_ACCESS_TOKEN`,
`SF_USERNAME`, `SF_PASSWORD`, `SF_SECURITY_TOKEN`, `SF_DOMAIN`, `SF_CONSUMER_KEY`, `SF_PRIVATE_KEY_FILE`), then a
`.env` file (read with python-dotenv, the well-kept parser of that format, rather than a hand-written one).

Secrets (the access token, the password, the security token and the consumer key) never appear in a message:
`OrgOptions.__repr__` hides them, `describe()` names only the non-secret parts, and every error raised while
connecting is re-raised as `OrgConnectError` with the secrets replaced by `***` and no chained cause (a
traceback of the client's exception could carry them).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, ClassVar, Literal

from schemas.errors import Terminal, UsageError

API_VERSION = "59.0"

Method = Literal["token", "password", "jwt"]

# option name -> environment variable (and `.env` key)
ENV: dict[str, str] = {
    "instance_url": "SF_INSTANCE_URL",
    "access_token": "SF_ACCESS_TOKEN",
    "username": "SF_USERNAME",
    "password": "SF_PASSWORD",
    "security_token": "SF_SECURITY_TOKEN",
    "domain": "SF_DOMAIN",
    "consumer_key": "SF_CONSUMER_KEY",
    "private_key_file": "SF_PRIVATE_KEY_FILE",
}
# option name -> the CLI flag that sets it (for messages)
FLAGS: dict[str, str] = {
    "instance_url": "--instance-url",
    "access_token": "--session-id",
    "username": "--username",
    "password": "--password",
    "security_token": "--security-token",
    "domain": "--domain",
    "consumer_key": "--consumer-key",
    "private_key_file": "--private-key-file",
}
SECRET_OPTIONS = ("access_token", "password", "security_token", "consumer_key")
REDACTED = "***"


class OrgConnectError(Terminal):
    """The org options are incomplete or contradictory, or the org refused the login (secrets redacted)."""


@dataclass(frozen=True)
class OrgOptions:
    """How to reach one org. Secret fields are excluded from `repr` (and so from logs of this object)."""

    instance_url: str | None = None
    access_token: str | None = field(default=None, repr=False)
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    security_token: str | None = field(default=None, repr=False)
    domain: str | None = None  # "login" (production, the default), "test" (sandboxes) or a My Domain
    consumer_key: str | None = field(default=None, repr=False)
    private_key_file: str | None = None
    # where each set option came from: "flag", "env" or the .env path (for messages; never values)
    sources: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    OPTION_NAMES: ClassVar[tuple[str, ...]] = tuple(ENV)

    # -- resolution -------------------------------------------------------------------------------------------

    @classmethod
    def resolve(
        cls,
        flags: Mapping[str, str | None] | None = None,
        *,
        environ: Mapping[str, str] | None = None,
        dotenv: Path | str | None = ".env",
        dotenv_required: bool = False,
    ) -> OrgOptions:
        """The options from `flags` (option name -> value; None = not given), then `environ` (default:
        `os.environ`), then the `dotenv` file (skipped when absent unless `dotenv_required`)."""
        flags = dict(flags or {})
        unknown = sorted(set(flags) - set(ENV))
        if unknown:
            raise UsageError(f"Unknown org option(s) {', '.join(unknown)}; known: {', '.join(ENV)}.")
        env = os.environ if environ is None else environ
        dot: dict[str, str] = {}
        dot_label = ""
        if dotenv is not None:
            path = Path(dotenv)
            dot_label = str(path)
            if path.is_file():
                from dotenv import dotenv_values

                dot = {k: v for k, v in dotenv_values(path).items() if v is not None}
            elif dotenv_required:
                raise UsageError(f"{path}: no such .env file; give an existing file or leave the option out.")
        values: dict[str, str] = {}
        sources: list[tuple[str, str]] = []
        for name, var in ENV.items():
            for source, table in (("flag", flags), ("env", env), (dot_label, dot)):
                value = table.get(name if source == "flag" else var)
                if value is not None and value != "":
                    values[name] = value.strip()
                    sources.append((name, source))
                    break
        return cls(**values, sources=tuple(sources))

    # -- what was given ---------------------------------------------------------------------------------------

    def source(self, name: str) -> str:
        """Where option `name` came from, for messages: `--flag`, `$SF_X` or `SF_X in FILE`."""
        where = dict(self.sources).get(name)
        if where == "flag" or where is None:
            return FLAGS[name]
        if where == "env":
            return f"${ENV[name]}"
        return f"{ENV[name]} in {where}"

    def method(self) -> Method:
        """The way to log in, or an `OrgConnectError` listing what to add or remove."""
        ways: dict[Method, tuple[str, ...]] = {
            "token": ("instance_url", "access_token"),
            "password": ("username", "password"),
            "jwt": ("username", "consumer_key", "private_key_file"),
        }
        # the options only one way uses say which way is meant
        markers: dict[Method, tuple[str, ...]] = {
            "token": ("access_token",),
            "password": ("password",),
            "jwt": ("consumer_key", "private_key_file"),
        }
        meant = [m for m, names in markers.items() if any(getattr(self, n) for n in names)]
        if not meant:
            raise OrgConnectError(
                "No org given. Give one of: --instance-url URL --session-id TOKEN; --username U --password P "
                "[--security-token T]; --username U --consumer-key K --private-key-file FILE (JWT), as flags, "
                f"environment variables ({', '.join(ENV.values())}) or in a .env file."
            )
        if len(meant) > 1:
            given = [self.source(n) for m in meant for n in markers[m] if getattr(self, n)]
            raise OrgConnectError(
                f"Options of more than one login way are set ({', '.join(given)}): "
                f"{' and '.join(meant)}. Keep the options of one way only."
            )
        way = meant[0]
        missing = [FLAGS[n] for n in ways[way] if not getattr(self, n)]
        if missing:
            raise OrgConnectError(
                f"The {way} login needs {', '.join(missing)} as well (or its SF_ variable)."
            )
        if way == "jwt" and self.private_key_file and not Path(self.private_key_file).is_file():
            raise OrgConnectError(
                f"{self.source('private_key_file')}: {self.private_key_file} is not a file; give the path of "
                "the private key (PEM) of the connected app's certificate."
            )
        if way == "token" and self.instance_url and not self.instance_url.startswith("https://"):
            raise OrgConnectError(
                f"{self.source('instance_url')} must be an https:// URL (got {self.instance_url!r})."
            )
        return way

    def secrets(self) -> tuple[str, ...]:
        """The secret values set, longest first (so a secret containing another is redacted whole)."""
        found = {getattr(self, n) for n in SECRET_OPTIONS if getattr(self, n)}
        if self.password and self.security_token:
            found.add(self.password + self.security_token)  # what the SOAP login sends
        return tuple(sorted(found, key=len, reverse=True))

    def redact(self, text: str) -> str:
        """`text` with every secret value replaced by `***`."""
        for secret in self.secrets():
            text = text.replace(secret, REDACTED)
        return text

    def describe(self) -> str:
        """A one-line, secret-free description of the target, for progress lines and reports."""
        way = self.method()
        if way == "token":
            return f"{self.instance_url} (access token)"
        who = f"{self.username} at {self.domain or 'login'}"
        return f"{who} ({'password' if way == 'password' else 'JWT bearer'})"

    def with_flags(self, **flags: str | None) -> OrgOptions:
        """These options with some replaced (a flag given later wins)."""
        given = {k: v for k, v in flags.items() if v is not None}
        kept = tuple((n, s) for n, s in self.sources if n not in given)
        return replace(self, **given, sources=kept + tuple((n, "flag") for n in given))

    def public(self) -> dict[str, Any]:
        """The non-secret options, for a report."""
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name in ENV and f.name not in SECRET_OPTIONS and getattr(self, f.name)
        }


def connect(opts: OrgOptions, *, session: Any = None, version: str = API_VERSION) -> Any:
    """A logged-in `simple_salesforce.Salesforce` for `opts` (`session`: a `requests.Session` to use, e.g.
    one trusting a test server's certificate). The login is checked with one call (`/limits`). Raises `OrgConnectError` with secrets redacted."""
    from simple_salesforce import Salesforce

    way = opts.method()
    kwargs: dict[str, Any] = {"version": version, "session": session}
    if opts.domain:
        kwargs["domain"] = opts.domain
    try:
        if way == "token":
            sf = Salesforce(instance_url=opts.instance_url, session_id=opts.access_token, **kwargs)
        elif way == "password":
            sf = Salesforce(
                username=opts.username,
                password=opts.password,
                security_token=opts.security_token or "",
                **kwargs,
            )
        else:
            sf = Salesforce(
                username=opts.username,
                consumer_key=opts.consumer_key,
                privatekey_file=opts.private_key_file,
                **kwargs,
            )
        sf.limits()  # one call proves the token works (a token login sends nothing until then)
        return sf
    except Exception as exc:  # the client's errors: login refused, network, malformed answers
        message = opts.redact(f"{type(exc).__name__}: {exc}")
        raise OrgConnectError(
            f"Cannot log in to {opts.describe()}: {message}. Check the org options and that the org is reachable."
        ) from None
