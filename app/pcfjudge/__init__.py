"""pcfjudge: permutation-consensus LLM judging (PCFJudge listwise, APOCJudge pairwise) over HTTP.

The public surface is what ``__all__`` lists: the request and response models the service validates with (pydantic
only; importing them loads neither FastAPI nor Redis nor a provider SDK). In process, judge through
``pcfjudge.services.Services.build(settings).judge``. ``pcfjudge.Client`` / ``pcfjudge.AsyncClient`` call a running
service. Every public name is loaded on first use, so ``import pcfjudge`` imports neither pydantic nor httpx.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pcfjudge.api.schemas.common import ErrorResponse
    from pcfjudge.api.schemas.listwise import ListwiseRequest, ListwiseResponse
    from pcfjudge.api.schemas.pairwise import PairwiseRequest, PairwiseResponse
    from pcfjudge.client import AsyncClient, Client, RetryPolicy, ServiceError

__version__ = "0.1.0"
# Where each public name lives, imported on first use: ``import pcfjudge.integrations.trl`` (httpx and the standard
# library only, for a trainer process) must not load pydantic by way of this package's __init__.
_LAZY = {
    "PairwiseRequest": "pcfjudge.api.schemas.pairwise",
    "PairwiseResponse": "pcfjudge.api.schemas.pairwise",
    "ErrorResponse": "pcfjudge.api.schemas.common",
    "ListwiseRequest": "pcfjudge.api.schemas.listwise",
    "ListwiseResponse": "pcfjudge.api.schemas.listwise",
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
