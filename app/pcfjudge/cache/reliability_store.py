"""Where calibration records live: Redis with ``PCFJ_REDIS_URL`` (shared by every replica and the CronJob), else a
JSON file (``PCFJ_CALIBRATION_FILE``, default ``~/.cache/pcfjudge/calibration.json``, replaced atomically).

A record is the JSON object of ``judging.reliability.Reliability.as_dict`` (this layer keeps them as plain data);
two kinds are kept:
  * the latest record per (model, prompt version): what the service loads and ``GET /v1/models`` shows;
  * the baseline per (model, prompt version, slice): the first record of that slice (``pcfjudge calibrate
    --rebaseline`` replaces it), which later runs are compared with for drift.

In Redis: ``pcfjudge:calibration:latest:<model>:<version>`` and ``pcfjudge:calibration:baseline:<model>:<version>:
<slice>`` (JSON strings, no TTL) and the set ``pcfjudge:calibration:index`` of the latest keys; one key per operation,
so Redis Cluster needs no hash tags. The file: ``{"format": 1, "latest": [...], "baselines": [...]}``.

``Refresher`` loads the latest records at start-up and every ``PCFJ_CALIBRATION_REFRESH_S`` after, handing them to
its ``apply``; a store that fails keeps the records already loaded (and says so in the log, once per outage).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, Protocol, TypeVar

from redis.exceptions import RedisError

from pcfjudge.cache.redis_client import RedisClient, close, connect
from pcfjudge.settings import Settings

log = logging.getLogger(__name__)

Record = dict[str, Any]
DEFAULT_FILE = Path("~") / ".cache" / "pcfjudge" / "calibration.json"
PREFIX = "pcfjudge:calibration"
FORMAT = 1
T = TypeVar("T")


class StoreError(Exception):
    """The store cannot be read or written; the message says which and why."""


class ReliabilityStore(Protocol):
    where: str  # for messages: the file's path, or the Redis URL without credentials

    async def latest(self) -> list[Record]: ...

    async def baseline(self, model: str, prompt_version: str, slice_name: str) -> Record | None: ...

    async def save(self, record: Mapping[str, Any], *, baseline: bool) -> None: ...

    async def aclose(self) -> None: ...


def _key(record: Mapping[str, Any]) -> tuple[str, str, str]:
    values = tuple(record.get(name) for name in ("model", "prompt_version", "slice"))
    if not all(isinstance(v, str) and v for v in values):
        raise StoreError(f"a calibration record needs model, prompt_version and slice; got {values}")
    return values  # type: ignore[return-value]


def calibration_path(settings: Settings) -> Path:
    return (settings.calibration.calibration_file or DEFAULT_FILE).expanduser()


class FileStore:
    """The records in one JSON file; a missing file holds none. Writes go to a temporary file in the same directory,
    then replace the old one, so a reader (the service) never sees half a file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.where = str(path)

    def _read(self) -> dict[str, list[Record]]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {"latest": [], "baselines": []}
        except OSError as exc:
            raise StoreError(f"cannot read {self.path}: {exc}") from exc
        try:
            data = json.loads(text) if text.strip() else {}
        except ValueError as exc:
            raise StoreError(f"{self.path} is not JSON ({exc}); move it away to start afresh") from exc
        if not isinstance(data, dict):
            raise StoreError(f"{self.path} does not hold calibration records")
        return {kind: [r for r in data.get(kind, []) if isinstance(r, dict)] for kind in ("latest", "baselines")}

    def _write(self, data: Mapping[str, Any]) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as out:
                    json.dump({"format": FORMAT, **data}, out, indent=1)
                    out.write("\n")
                    out.flush()
                    os.fsync(out.fileno())
                os.replace(tmp, self.path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        except OSError as exc:
            raise StoreError(f"cannot write {self.path}: {exc}") from exc

    def _save(self, record: Mapping[str, Any], baseline: bool) -> None:
        model, version, slice_name = _key(record)
        data = self._read()
        data["latest"] = [r for r in data["latest"] if (r.get("model"), r.get("prompt_version")) != (model, version)]
        data["latest"].append(dict(record))
        if baseline:
            data["baselines"] = [r for r in data["baselines"] if _key_or_none(r) != (model, version, slice_name)]
            data["baselines"].append(dict(record))
        self._write(data)

    async def latest(self) -> list[Record]:
        return (await asyncio.to_thread(self._read))["latest"]

    async def baseline(self, model: str, prompt_version: str, slice_name: str) -> Record | None:
        found = (await asyncio.to_thread(self._read))["baselines"]
        return next((r for r in found if _key_or_none(r) == (model, prompt_version, slice_name)), None)

    async def save(self, record: Mapping[str, Any], *, baseline: bool) -> None:
        await asyncio.to_thread(self._save, record, baseline)

    async def aclose(self) -> None:
        return None


def _key_or_none(record: Mapping[str, Any]) -> tuple[str, str, str] | None:
    try:
        return _key(record)
    except StoreError:
        return None


class RedisStore:
    """The records in Redis (keys in the module docstring)."""

    def __init__(self, client: RedisClient, where: str) -> None:
        self.client = client
        self.where = where

    async def _do(self, what: str, op: Callable[[RedisClient], Awaitable[T]]) -> T:
        try:
            return await op(self.client)
        except RedisError as exc:
            raise StoreError(f"cannot {what} ({type(exc).__name__}: {exc})") from exc

    async def latest(self) -> list[Record]:
        async def read(client: RedisClient) -> list[Any]:
            keys = sorted(
                k.decode() if isinstance(k, bytes) else str(k) for k in await client.smembers(f"{PREFIX}:index")
            )
            return [await client.get(key) for key in keys]

        values = await self._do("read the calibration records from Redis", read)
        return [r for r in (_decode(v) for v in values) if r is not None]

    async def baseline(self, model: str, prompt_version: str, slice_name: str) -> Record | None:
        key = f"{PREFIX}:baseline:{model}:{prompt_version}:{slice_name}"
        return _decode(await self._do("read the baseline from Redis", lambda client: client.get(key)))

    async def save(self, record: Mapping[str, Any], *, baseline: bool) -> None:
        model, version, slice_name = _key(record)
        text = json.dumps(dict(record))
        latest = f"{PREFIX}:latest:{model}:{version}"

        async def write(client: RedisClient) -> None:
            if baseline:
                await client.set(f"{PREFIX}:baseline:{model}:{version}:{slice_name}", text)
            await client.set(latest, text)
            await client.sadd(f"{PREFIX}:index", latest)

        await self._do("store the calibration record in Redis", write)

    async def aclose(self) -> None:
        await close(self.client)


def _decode(value: bytes | str | None) -> Record | None:
    if value is None:
        return None
    try:
        data = json.loads(value)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _redacted(url: str) -> str:
    scheme, sep, rest = url.partition("://")
    return f"{scheme}{sep}{rest.rpartition('@')[2]}" if sep else url


def open_store(settings: Settings) -> ReliabilityStore:
    """Redis with ``PCFJ_REDIS_URL``, else the calibration file (nothing is read or connected until first used)."""
    cache, url = settings.cache, settings.cache.redis_url
    if not url:
        return FileStore(calibration_path(settings))
    client = connect(  # off the request path: a slow Redis is no reason to give up
        url,
        timeout_s=max(cache.redis_timeout_s, 2.0),
        connect_timeout_s=max(cache.redis_connect_timeout_s, 2.0),
        max_connections=4,
    )
    return RedisStore(client, _redacted(url))


class Refresher:
    """Loads the latest records into ``apply`` now (``start``) and every ``interval_s`` until ``aclose``."""

    def __init__(self, store: ReliabilityStore, apply: Callable[[list[Record]], None], interval_s: float) -> None:
        self.store = store
        self.apply = apply
        self.interval_s = interval_s
        self.failing = False
        self._task: asyncio.Task[None] | None = None

    async def refresh(self) -> bool:
        """One reload; False (records kept as they were) when the store failed."""
        try:
            records = await self.store.latest()
        except StoreError as exc:
            if not self.failing:
                log.warning("calibration records not reloaded, keeping those loaded: %s", exc)
            self.failing = True
            return False
        if self.failing:
            log.info("calibration records reloaded from %s again", self.store.where)
        self.failing = False
        try:
            self.apply(records)
        except Exception:  # a bug in applying must not end the refresh loop: keep what is loaded, say so
            log.exception("calibration records from %s could not be applied", self.store.where)
            return False
        return True

    async def start(self) -> None:
        await self.refresh()
        if self._task is None:
            self._task = asyncio.create_task(self._loop(), name="calibration-refresh")

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            await self.refresh()

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self.store.aclose()
