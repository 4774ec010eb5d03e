"""Cache identity of a backend call: the item hash and the key of one (item, order, model, sample, prompt, params)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from pcfjudge.types import CallKind, DecodingParams


def item_hash(question: str, texts: Sequence[str], extra: dict[str, Any] | None = None) -> str:
    """Hash of the canonical item: question, candidates in input order, anything else that shapes the answer."""
    payload = json.dumps({"q": question, "c": list(texts), "x": extra or {}}, ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


def cache_key(
    item: str, kind: CallKind, order: Sequence[int], model: str, sample: int, version: str, params: DecodingParams
) -> str:
    """One entry per backend call; the item hash is a Redis Cluster hash tag (all of an item's runs in one slot)."""
    perm = "-".join(map(str, order))
    return f"pcfj:{{{item}}}:{kind}:{perm}:{model}:{sample}:{version}:{_digest(params)}"


@lru_cache(maxsize=256)
def _digest(params: DecodingParams) -> str:
    """The decoding parameters' part of a key (a service has a handful of distinct ones: hashed once each)."""
    return hashlib.sha256(params.key().encode()).hexdigest()[:12]
