"""pcfjudge: permutation-consensus LLM judging (PCFJudge listwise, APOCJudge pairwise) over HTTP.

The public surface is what ``__all__`` lists: the request and response models the service validates with (pydantic
only; importing them loads neither FastAPI nor Redis nor a provider SDK). In process, judge through
``pcfjudge.services.Services.build(settings).judge``. ``pcfjudge.Client`` / ``pcfjudge.AsyncClient`` call a running
service (loaded on first use, so ``import pcfjudge`` does not import httpx).
"""

from typing import TYPE_CHECKING, Any

from pcfjudge.api.pairwise_schemas import PairwiseRequest, PairwiseResponse
from pcfjudge.api.schemas import ErrorResponse, ListwiseRequest, ListwiseResponse

if TYPE_CHECKING:
    from pcfjudge.client import AsyncClient, Client, RetryPolicy, ServiceError

__version__ = "0.1.0"
_CLIENT_NAMES = ("AsyncClient", "Client", "RetryPolicy", "ServiceError")


def __getattr__(name: str) -> Any:
    """``pcfjudge.Client`` and friends, imported from ``pcfjudge.client`` on first use."""
    if name in _CLIENT_NAMES:
        from pcfjudge import client

        return getattr(client, name)
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
