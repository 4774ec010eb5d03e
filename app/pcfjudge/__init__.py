"""pcfjudge: permutation-consensus LLM judging (PCFJudge listwise, APOCJudge pairwise) over HTTP.

The public surface is what ``__all__`` lists: the request and response models the service validates with (pydantic
only; importing them loads neither FastAPI nor Redis nor a provider SDK). In process, judge through
``pcfjudge.services.Services.build(settings).judge``. ``pcfjudge.Client`` / ``pcfjudge.AsyncClient`` call a running
service. Every public name is loaded on first use, so ``import pcfjudge`` imports neither pydantic nor httpx.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pcfjudge.client import AsyncClient, Client, RetryPolicy, ServiceError
    from pcfjudge.doors.listwise.listwise_protocol import ListwiseRequest, ListwiseResponse
    from pcfjudge.doors.pairwise.pairwise_protocol import PairwiseRequest, PairwiseResponse
    from pcfjudge.schemas.common import ErrorResponse

from pcfjudge import _moved
from pcfjudge._version import __version__

_moved.install()  # the modules that moved in 0.2 keep their old names for one release, with a DeprecationWarning

# Where each public name lives, imported on first use: ``import pcfjudge.integrations.trl`` (httpx and the standard
# library only, for a trainer process) must not load pydantic by way of this package's __init__.
_LAZY = {
    "PairwiseRequest": "pcfjudge.doors.pairwise.pairwise_protocol",
    "PairwiseResponse": "pcfjudge.doors.pairwise.pairwise_protocol",
    "ErrorResponse": "pcfjudge.schemas.common",
    "ListwiseRequest": "pcfjudge.doors.listwise.listwise_protocol",
    "ListwiseResponse": "pcfjudge.doors.listwise.listwise_protocol",
    "AsyncClient": "pcfjudge.client",
    "Client": "pcfjudge.client",
    "RetryPolicy": "pcfjudge.client",
    "ServiceError": "pcfjudge.client",
}


def __getattr__(name: str) -> Any:
    """The HTTP models and ``pcfjudge.Client`` and friends, imported from their modules on first use."""
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'pcfjudge' has no attribute {name!r}")


__all__ = [
    "AsyncClient",
    "Client",
    "ErrorResponse",
    "ListwiseRequest",
    "ListwiseResponse",
    "PairwiseRequest",
    "PairwiseResponse",
    "RetryPolicy",
    "ServiceError",
    "__version__",
]
