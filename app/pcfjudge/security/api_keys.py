"""API keys: ``name:key`` or ``name:sha256:<hex>`` entries; only digests are kept, compared in constant time.

Keys come from ``PCFJ_API_KEYS`` (comma- or newline-separated) and/or ``PCFJ_API_KEYS_FILE`` (one per line, ``#``
comments). A client sends ``Authorization: Bearer <key>`` or ``x-api-key: <key>``; the key's *name* is what logs and
metrics see.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Iterable
from dataclasses import dataclass

from pcfjudge.settings import AccessAndSpend

_HEX64 = re.compile(r"[0-9a-f]{64}")
_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")


def digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()


@dataclass(frozen=True, slots=True)
class KeyRing:
    entries: tuple[tuple[str, bytes], ...]  # (name, sha256 of the key)

    @property
    def enabled(self) -> bool:
        return bool(self.entries)

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.entries]

    def identify(self, presented: str | None) -> str | None:
        """The name of the key ``presented`` (None if it matches none); every entry is compared, in constant time."""
        if not presented:
            return None
        candidate = digest(presented)
        found: str | None = None
        for name, expected in self.entries:
            if hmac.compare_digest(candidate, expected):
                found = name
        return found

    @classmethod
    def parse(cls, lines: Iterable[str]) -> KeyRing:
        """Entries from ``name:key`` / ``name:sha256:<hex>`` lines; ``ValueError`` names the bad line (not its key)."""
        entries: list[tuple[str, bytes]] = []
        for number, raw in enumerate(lines, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            name, sep, secret = line.partition(":")
            if not sep or not secret or not _NAME.fullmatch(name):
                raise ValueError(
                    f"API key entry {number} must look like 'name:key' or 'name:sha256:<64 hex>' "
                    "(name: letters, digits, '_', '.', '-')"
                )
            kind, sep, hexdigest = secret.partition(":")
            if kind == "sha256" and sep:
                if not _HEX64.fullmatch(hexdigest.lower()):
                    raise ValueError(f"API key entry {number} ({name}): sha256 needs 64 hex digits")
                entries.append((name, bytes.fromhex(hexdigest)))
            else:
                entries.append((name, digest(secret)))
        if len({name for name, _ in entries}) != len(entries):
            raise ValueError("API key names must be unique")
        return cls(tuple(entries))

    @classmethod
    def from_settings(cls, settings: AccessAndSpend) -> KeyRing:
        lines: list[str] = []
        if settings.api_keys is not None:
            lines += re.split(r"[,\n]", settings.api_keys.get_secret_value())
        if settings.api_keys_file is not None:
            lines += settings.api_keys_file.read_text(encoding="utf-8").splitlines()
        return cls.parse(lines)


def presented_key(headers: Iterable[tuple[bytes, bytes]]) -> str | None:
    """The key a request carries: ``Authorization: Bearer <key>`` or ``x-api-key: <key>``."""
    for name, value in headers:
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
        elif name == b"x-api-key" and value.strip():
            return value.decode("latin-1").strip()
    return None
