"""Custom ids: a batch request is named after its call's cache key, so results map back to cache entries.

A cache key (``pcfj:{item}:kind:order:provider:model:sample:version:params``) is longer than, and has characters
outside, what Anthropic takes (``^[a-zA-Z0-9_-]{1,64}$``; OpenAI and ``vllm run-batch`` take any string), so the id
is a fixed-length digest of the key: the same call always gets the same id, in every batch and every provider, and
the submission in ``state.json`` maps each id back to its key.
"""

from __future__ import annotations

import hashlib
import re

PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
PREFIX = "pcfj-"


def custom_id(key: str) -> str:
    """``pcfj-`` and 40 hex digits (160 bits) of the key's SHA-256: 45 characters, valid for every provider."""
    return PREFIX + hashlib.sha256(key.encode()).hexdigest()[:40]
