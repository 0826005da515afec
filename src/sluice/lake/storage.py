"""Where a lake lives: its URI, the storage options every reader and writer of it gets, and sluice's
own objects in it, read and written with object-store semantics.

A lake is a plain path, a ``file://`` URI or an object store delta-rs writes to: ``s3://`` (also
``s3a://``), ``abfss://`` / ``abfs://`` / ``az://`` (Azure), ``gs://`` (Google Cloud Storage).
``LakeStore`` names it once and hands the same storage options to every delta-rs call
(``delta_options``) and to every object sluice reads or writes itself (``obstore``, the Python
binding of the ``object_store`` crate delta-rs is built on, so both read the same option names
and the same ``AWS_*`` / ``AZURE_*`` / ``GOOGLE_*`` environment). Options given in the TOML
config's ``[lake.storage]`` table win over the environment.

What sluice keeps of its own is written as whole objects, never appended to, renamed or listed as
the truth: ``put`` replaces an object in one write, ``create`` writes it only when it is absent
(``If-None-Match: *`` on S3). ``check_conditional_writes`` proves at start that the store refuses a
second ``create`` of one key, since a store that ignores conditional writes loses Delta commits
silently.

Storage options may hold secrets: ``LakeStore`` never shows them (its ``repr`` is the URI), and
``redact`` takes their values out of any text sluice prints.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from sluice.errors import ConfigError, StorageFullError, storage_full

__all__ = ["REMOTE_SCHEMES", "LakeStore", "lake_store", "redact"]

#: URI schemes of object stores, as delta-rs names them, and the family whose options apply.
REMOTE_SCHEMES: Final = {
    "s3": "aws", "s3a": "aws", "abfss": "azure", "abfs": "azure", "az": "azure", "adl": "azure",
    "azure": "azure", "gs": "google",
}
# object_store's client options (not a store's own configuration), by their lower-case names.
_CLIENT_OPTIONS: Final = frozenset({
    "allow_http", "allow_invalid_certificates", "connect_timeout", "timeout", "pool_idle_timeout",
    "pool_max_idle_per_host", "proxy_url", "user_agent", "http1_only", "http2_only",
})
# Option-name fragments whose values are secret.
_SECRET_WORDS: Final = ("secret", "key", "token", "password", "sas", "credential", "signature")


@dataclass(frozen=True)
class LakeStore:
    """A lake's root and its storage options; picklable (executors rebuild the client)."""

    uri: str  # a local absolute path, or scheme://bucket[/prefix] without a trailing slash
    options: Mapping[str, str] = field(default_factory=dict, repr=False)

    def __repr__(self) -> str:
        return f"LakeStore({self.uri!r})"

    # -- naming ------------------------------------------------------------------------------------
    @property
    def remote(self) -> bool:
        """True for an object store, False for a local (or mounted) file system."""
        return self.uri.partition("://")[0] in REMOTE_SCHEMES

    def join(self, *parts: str) -> str:
        """The URI (or path) of ``parts`` under the root."""
        return "/".join([self.uri.rstrip("/"), *(p.strip("/") for p in parts if p)])

    def key(self, uri: str) -> str:
        """The object key of a URI under the root, relative to it."""
        root = self.uri.rstrip("/") + "/"
        if not uri.startswith(root):
            raise ValueError(f"{uri} is not under the lake {self.uri}")
        return uri[len(root):]

    def delta_options(self) -> dict[str, str] | None:
        """The ``storage_options`` of every delta-rs call on this lake (None for a local path)."""
        return dict(self.options) if self.remote else None

    # -- objects -----------------------------------------------------------------------------------
    def _store(self) -> Any:
        token = (self.uri, tuple(sorted(self.options.items())))
        cached = _STORES.get(token)
        if cached is None:
            from obstore.store import LocalStore, from_url

            if self.remote:
                config, client = _split_options(self.options)
                settings: dict[str, Any] = {"config": config or None, "client_options": client or None}
                cached = from_url(self.uri, **settings)  # options whose names object_store checks itself
            else:
                os.makedirs(self.uri, exist_ok=True)
                cached = LocalStore(self.uri)
            _STORES[token] = cached
        return cached

    def get(self, key: str) -> bytes | None:
        """The object ``key`` under the root, None when there is none (a read makes no folder: a
        local root that does not exist holds nothing)."""
        import obstore

        if not self.remote and not os.path.isdir(self.uri):
            return None
        try:
            return bytes(obstore.get(self._store(), key).bytes())
        except FileNotFoundError:
            return None
        except Exception as exc:
            raise self.error(f"reading {key}", exc) from None

    def get_json(self, key: str) -> Any:
        """The JSON document ``key``, None when there is none; a damaged one is a ``ConfigError``."""
        found = self.get(key)
        if found is None:
            return None
        try:
            return json.loads(found)
        except ValueError as exc:
            raise ConfigError(f"{self.join(key)} is damaged ({exc}); it is sluice's own file, not yours to "
                              "edit: restore it or start the lake over") from None

    def put(self, key: str, data: bytes) -> None:
        """Write the object ``key`` whole (a reader sees the old object or the new one)."""
        import obstore

        try:
            obstore.put(self._store(), key, data)
        except Exception as exc:
            raise self.error(f"writing {key}", exc) from None

    def read_file(self, uri: str) -> Any:
        """A file of the lake as a pyarrow input (memory-mapped when local), for Parquet and Arrow IPC."""
        import pyarrow as pa

        if not self.remote:
            return pa.memory_map(uri)
        found = self.get(self.key(uri))
        if found is None:
            raise ConfigError(f"{uri} is missing from the lake: a staged file of the batch was removed; restart "
                              "the run (the batch is replayed)")
        return pa.BufferReader(found)

    def write_file(self, uri: str, data: bytes) -> None:
        """Write a whole file of the lake (a local one through a file, a remote one in one PUT)."""
        if self.remote:
            self.put(self.key(uri), data)
            return
        os.makedirs(os.path.dirname(uri), exist_ok=True)
        with open(uri, "wb") as f:
            f.write(data)

    def put_json(self, key: str, doc: Any) -> None:
        """``put`` of a JSON document."""
        self.put(key, json.dumps(doc).encode("utf-8"))

    def create(self, key: str, data: bytes) -> bool:
        """Write ``key`` only if no object has that key: True when written, False when one was there."""
        import obstore
        from obstore.exceptions import AlreadyExistsError, PreconditionError

        try:
            obstore.put(self._store(), key, data, mode="create")
        except (AlreadyExistsError, PreconditionError):
            return False
        except Exception as exc:
            raise self.error(f"creating {key}", exc) from None
        return True

    def delete(self, key: str) -> None:
        """Remove ``key`` (nothing when it is not there)."""
        import obstore

        try:
            obstore.delete(self._store(), key)
        except FileNotFoundError:
            pass
        except Exception as exc:
            raise self.error(f"deleting {key}", exc) from None

    def keys(self, prefix: str) -> Iterator[str]:
        """The keys under ``prefix`` (cleanup and copying only: never the truth of what exists)."""
        import obstore

        try:
            for chunk in obstore.list(self._store(), prefix.rstrip("/") + "/"):
                for meta in chunk:
                    yield str(meta["path"])
        except FileNotFoundError:
            return
        except Exception as exc:
            raise self.error(f"listing {prefix}", exc) from None

    def folders(self, prefix: str) -> list[str]:
        """The names of the folders right under ``prefix`` (sorted)."""
        if not self.remote:
            path = os.path.join(self.uri, prefix) if prefix else self.uri
            try:
                return sorted(n for n in os.listdir(path) if os.path.isdir(os.path.join(path, n)))
            except FileNotFoundError:
                return []
        import obstore

        try:
            found = obstore.list_with_delimiter(self._store(), prefix.rstrip("/") + "/" if prefix else None)
        except FileNotFoundError:
            return []
        except Exception as exc:
            raise self.error(f"listing {prefix or 'the lake'}", exc) from None
        return sorted(str(p).rstrip("/").rsplit("/", 1)[-1] for p in found["common_prefixes"])

    def delete_prefix(self, prefix: str) -> None:
        """Remove every object under ``prefix``."""
        import obstore

        keys = list(self.keys(prefix))
        if keys:
            try:
                obstore.delete(self._store(), keys)
            except FileNotFoundError:
                pass
            except Exception as exc:
                raise self.error(f"deleting {prefix}", exc) from None
        if not self.remote:
            _remove_empty_dirs(os.path.join(self.uri, prefix))

    def copy_prefix(self, source: str, target: str) -> int:
        """Copy every object under ``source`` to the same key under ``target`` (objects already
        there are copied again: the copy is idempotent). The number of objects copied."""
        import obstore

        count = 0
        for key in self.keys(source):
            dest = target.rstrip("/") + "/" + key[len(source.rstrip("/")) + 1:]
            try:
                obstore.copy(self._store(), key, dest)
            except Exception as exc:
                raise self.error(f"copying {key}", exc) from None
            count += 1
        return count

    # -- checks and errors -------------------------------------------------------------------------
    def check_conditional_writes(self, probe: str) -> None:
        """Refuse a store that does not honour ``If-None-Match``: delta-rs commits a table version
        by creating its log entry only if absent, and on a store that ignores the condition two
        writers both "succeed" and one commit is lost. ``probe``: the folder of the object tried."""
        key = f"{probe}/{uuid.uuid4().hex}"
        try:
            if not self.create(key, b"1"):
                raise ConfigError(f"the lake {self.uri} refused to create a new object {key}")
            if self.create(key, b"2"):
                raise ConfigError(
                    f"the lake's store at {self.uri} ignores conditional writes (If-None-Match): it let sluice "
                    "create the same object twice, so concurrent Delta commits would be lost without an error. "
                    "Use a store that supports them (AWS S3, Azure, GCS, MinIO, Ceph RGW 18+, Cloudflare R2), or "
                    "turn them on in it (for an S3-compatible store: [lake.storage] aws_conditional_put = \"etag\" "
                    "where it supports ETag conditions)"
                )
        finally:
            self.delete(key)

    def error(self, doing: str, exc: BaseException) -> ConfigError | StorageFullError:
        """A ``ConfigError`` for a failed store call, with every secret option value taken out; a
        ``StorageFullError`` when the store's volume is full."""
        full = storage_full(exc, self.uri)
        if full is not None:
            return full
        kind = type(exc).__name__
        text = redact(str(exc).strip().splitlines()[0] if str(exc).strip() else kind, self.options)
        hint = ""
        if "Unauthenticated" in kind or "PermissionDenied" in kind or "403" in text:
            hint = ("; check the lake's credentials ([lake.storage] in the config, or the AWS_* / AZURE_* / "
                    "GOOGLE_* environment)")
        return ConfigError(f"the lake {self.uri}: {doing} failed: {text}{hint}")


_STORES: dict[tuple[str, tuple[tuple[str, str], ...]], Any] = {}  # one client per lake and options


def _split_options(options: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(the store's configuration, object_store's client options): ``allow_http`` and the like are
    client options, also when spelt ``AWS_ALLOW_HTTP`` as delta-rs takes them."""
    config: dict[str, str] = {}
    client: dict[str, str] = {}
    for name, value in options.items():
        bare = name.lower()
        for family in ("aws_", "azure_", "google_"):
            if bare.startswith(family) and bare[len(family):] in _CLIENT_OPTIONS:
                bare = bare[len(family):]
        if bare in _CLIENT_OPTIONS:
            client[bare] = value
        else:
            config[name] = value
    return config, client


def _remove_empty_dirs(path: str) -> None:
    for root, _dirs, _files in sorted(os.walk(path, topdown=False), key=lambda t: -len(t[0])):
        try:
            os.rmdir(root)
        except OSError:
            pass


def redact(text: str, options: Mapping[str, str]) -> str:
    """``text`` with the value of every secret storage option replaced by ``<redacted>``."""
    for name, value in options.items():
        if value and len(str(value)) >= 4 and any(w in name.lower() for w in _SECRET_WORDS):
            text = text.replace(str(value), "<redacted>")
    return text


def lake_store(lake: str | os.PathLike[str], storage: Mapping[str, Any] | None = None) -> LakeStore:
    """The ``LakeStore`` of ``--lake`` (a path or a URI) with the ``[lake.storage]`` options.

    A relative path is made absolute (every Spark node must see the lake at the same path); a
    ``file://`` URI is a path. An unknown scheme is a ``ConfigError`` naming those sluice writes.
    """
    text = os.fspath(lake).strip()
    if not text:
        raise ConfigError("--lake is empty: give a directory or an object-store URI (s3://bucket/lake)")
    options = {str(k): _option_text(k, v) for k, v in (storage or {}).items()}
    scheme, sep, rest = text.partition("://")
    if not sep or not re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]*", scheme):  # a path (that may hold "://")
        return LakeStore(os.path.abspath(text).rstrip("/") or "/", options)
    scheme = scheme.lower()
    if scheme == "file":
        path = rest if rest.startswith("/") else "/" + rest
        return LakeStore(os.path.abspath(path).rstrip("/") or "/", options)
    if scheme not in REMOTE_SCHEMES:
        raise ConfigError(f"--lake {text}: sluice writes lakes to a path, file://, s3://, abfss://, az:// or gs://; "
                          f"{scheme}:// is none of them")
    bucket = rest.split("/", 1)[0]
    if not bucket:
        raise ConfigError(f"--lake {text} names no bucket or container: {scheme}://BUCKET/PREFIX")
    return LakeStore(f"{scheme}://{rest.rstrip('/')}", options)


def _option_text(name: Any, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | str):
        return str(value)
    raise ConfigError(f"[lake.storage] {name} must be a string, number or boolean, found {type(value).__name__}")
