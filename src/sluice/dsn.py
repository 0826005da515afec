"""Connection settings: the DSN a user types, parsed into one frozen ``ConnectionConfig``.

Forms::

    mysql://user:password@host:port/?ssl=verify-ca&ssl_ca=/etc/ca.pem
    mariadb://user@db.example:3306/?password_env=DB_PASSWORD
    mysql://user@localhost/?socket=/run/mysqld/mysqld.sock

The password may be given in the DSN (URL-encoded), by ``password_env=NAME`` naming an environment
variable, or by ``SLUICE_PASSWORD``. It never appears in ``repr``, ``str``, logs or errors:
``ConnectionConfig.redacted()`` is what gets printed. The scheme names the server's flavor,
``"mysql"`` or ``"mariadb"``: ``flavor_of`` is where a server's flavor gets that name.

Every connection has a deadline (``ConnectionConfig.deadline``): a read or write that waits
longer for the server fails as ``TransportError``, which following a server meets by connecting
again. It is the DSN's ``read_timeout`` (``0``: none), ``DEFAULT_READ_TIMEOUT`` when not given;
``with_read_timeout`` gives a DSN one where it has none (``sluice run --stall-timeout``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from enum import StrEnum
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from sluice.errors import ConfigError

PASSWORD_ENV_DEFAULT = "SLUICE_PASSWORD"
#: Seconds a connection to the source may stay silent before it counts as stalled (module docstring).
DEFAULT_READ_TIMEOUT = 30.0


class SslMode(StrEnum):
    """TLS policy, with the meanings of the MySQL client's ``--ssl-mode``."""

    DISABLED = "disabled"
    PREFERRED = "preferred"
    REQUIRED = "required"
    VERIFY_CA = "verify-ca"
    VERIFY_IDENTITY = "verify-identity"


@dataclass(frozen=True, slots=True)
class ConnectionConfig:
    """Everything needed to open one connection to a server."""

    host: str = "127.0.0.1"
    port: int = 3306
    user: str = "root"
    password: str = field(default="", repr=False)
    socket: str | None = None
    database: str | None = None
    flavor: str | None = None  # "mysql" | "mariadb" from the scheme; the handshake decides otherwise
    ssl_mode: SslMode = SslMode.PREFERRED
    ssl_ca: str | None = None
    ssl_cert: str | None = None
    ssl_key: str | None = None
    server_public_key: str | None = None  # PEM file for caching_sha2_password over plain TCP
    get_server_public_key: bool = True  # otherwise full auth without TLS needs server_public_key
    connect_timeout: float = 10.0
    read_timeout: float | None = None  # seconds a connection may stay silent; None: DEFAULT_READ_TIMEOUT, 0: none
    server_id: int = 0  # replica server id when streaming; 0 picks one at random

    def __str__(self) -> str:
        return self.redacted()

    def redacted(self) -> str:
        """The DSN with the password replaced by ``***``: safe to log."""
        scheme = self.flavor or "mysql"
        auth = quote(self.user, safe="")
        if self.password:
            auth += ":***"
        where = f"{self.host}:{self.port}" if self.socket is None else "localhost"
        params = []
        if self.socket is not None:
            params.append(f"socket={self.socket}")
        if self.ssl_mode is not SslMode.PREFERRED:
            params.append(f"ssl={self.ssl_mode.value}")
        query = ("?" + "&".join(params)) if params else ""
        return f"{scheme}://{auth}@{where}/{self.database or ''}{query}"

    @property
    def deadline(self) -> float | None:
        """How long a read or write on a connection may wait for the server before the connection
        counts as stalled (a silent network path): ``read_timeout``, else ``DEFAULT_READ_TIMEOUT``;
        None when ``read_timeout=0`` turned it off."""
        if self.read_timeout is None:
            return DEFAULT_READ_TIMEOUT
        return self.read_timeout or None

    def with_(self, **changes: object) -> ConnectionConfig:
        """A copy with the given fields replaced."""
        return replace(self, **changes)  # type: ignore[arg-type]


_BOOL_TRUE = {"1", "true", "yes", "on"}
_BOOL_FALSE = {"0", "false", "no", "off"}
_KNOWN_PARAMS = {
    "ssl", "ssl_mode", "ssl_ca", "ssl_cert", "ssl_key", "socket", "password_env",
    "server_public_key", "get_server_public_key", "connect_timeout", "read_timeout", "server_id",
}


class Flavor(StrEnum):
    """A server's flavor, named as a DSN's scheme spells it. A ``str``: it compares equal to, and is
    written to JSON as, ``"mysql"`` or ``"mariadb"``, the form the lake's files keep."""

    MYSQL = "mysql"
    MARIADB = "mariadb"


def flavor_of(is_mariadb: bool) -> Flavor:
    """The flavor of a server that says (in its handshake or its binlog) whether it is MariaDB."""
    return Flavor.MARIADB if is_mariadb else Flavor.MYSQL


def parse_dsn(dsn: str, *, environ: dict[str, str] | None = None) -> ConnectionConfig:
    """Parse a ``mysql://`` or ``mariadb://`` DSN; raise ``ConfigError`` saying what is wrong."""
    env = os.environ if environ is None else environ
    try:
        parts = urlsplit(dsn)
    except ValueError as exc:
        raise ConfigError(f"cannot parse DSN: {exc}; expected mysql://user:password@host:port/") from None
    if parts.scheme not in ("mysql", "mariadb"):
        raise ConfigError(
            f"DSN scheme must be mysql:// or mariadb://, found {parts.scheme or 'none'!r}; "
            "example: mysql://repl@127.0.0.1:3306/"
        )
    params: dict[str, str] = {}
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key not in _KNOWN_PARAMS:
            raise ConfigError(
                f"unknown DSN parameter {key!r}; known parameters: {', '.join(sorted(_KNOWN_PARAMS))}"
            )
        params[key] = value
    try:
        port = parts.port or 3306
    except ValueError:
        raise ConfigError("DSN port must be a number between 1 and 65535") from None
    password = unquote(parts.password) if parts.password is not None else ""
    if not password:
        env_name = params.get("password_env", PASSWORD_ENV_DEFAULT)
        if "password_env" in params and env_name not in env:
            raise ConfigError(f"DSN says password_env={env_name} but that environment variable is not set")
        password = env.get(env_name, "")
    mode_text = params.get("ssl", params.get("ssl_mode", "preferred")).lower()
    try:
        ssl_mode = SslMode(mode_text)
    except ValueError:
        choices = ", ".join(m.value for m in SslMode)
        raise ConfigError(f"ssl={mode_text!r} is not a TLS mode; choose one of {choices}") from None
    if ssl_mode in (SslMode.VERIFY_CA, SslMode.VERIFY_IDENTITY) and not params.get("ssl_ca"):
        ssl_ca = None  # the system trust store is used
    else:
        ssl_ca = params.get("ssl_ca")
    config = ConnectionConfig(
        host=parts.hostname or "127.0.0.1",
        port=port,
        user=unquote(parts.username) if parts.username else "root",
        password=password,
        socket=params.get("socket"),
        database=(parts.path.lstrip("/") or None),
        flavor=parts.scheme,
        ssl_mode=ssl_mode,
        ssl_ca=ssl_ca,
        ssl_cert=params.get("ssl_cert"),
        ssl_key=params.get("ssl_key"),
        server_public_key=params.get("server_public_key"),
        get_server_public_key=_parse_bool(params.get("get_server_public_key", "true"), "get_server_public_key"),
        connect_timeout=_parse_float(params.get("connect_timeout", "10"), "connect_timeout"),
        read_timeout=(
            _parse_float(params["read_timeout"], "read_timeout", zero=True) if "read_timeout" in params else None
        ),
        server_id=_parse_int(params.get("server_id", "0"), "server_id"),
    )
    return config


def _parse_bool(text: str, name: str) -> bool:
    low = text.lower()
    if low in _BOOL_TRUE:
        return True
    if low in _BOOL_FALSE:
        return False
    raise ConfigError(f"DSN parameter {name}={text!r} must be true or false")


def _parse_float(text: str, name: str, *, zero: bool = False) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ConfigError(f"DSN parameter {name}={text!r} must be a number of seconds") from None
    if value < 0 or (value == 0 and not zero):
        raise ConfigError(f"DSN parameter {name}={text!r} must be positive{' (or 0: none)' if zero else ''}")
    return value


def _parse_int(text: str, name: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ConfigError(f"DSN parameter {name}={text!r} must be a whole number") from None


def with_read_timeout(dsn: str, seconds: float) -> str:
    """``dsn`` with ``read_timeout=seconds`` unless it gives a ``read_timeout`` of its own."""
    parts = urlsplit(dsn)
    if any(key == "read_timeout" for key, _ in parse_qsl(parts.query, keep_blank_values=True)):
        return dsn
    query = f"{parts.query}&" if parts.query else ""
    return parts._replace(query=f"{query}read_timeout={seconds:g}").geturl()


__all__ = ["DEFAULT_READ_TIMEOUT", "ConnectionConfig", "Flavor", "SslMode", "flavor_of", "parse_dsn",
           "with_read_timeout"]
