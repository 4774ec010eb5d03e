"""pcfjudge: permutation-consensus LLM judging (PCFJudge listwise, APOCJudge pairwise) over HTTP.

The public surface is what ``__all__`` lists: the request and response models the service validates with (pydantic
only; importing them loads neither FastAPI nor Redis nor a provider SDK). In process, judge through
``pcfjudge.services.Services.build(settings).judge``.
"""

from pcfjudge.api.pairwise_schemas import PairwiseRequest, PairwiseResponse
from pcfjudge.api.schemas import ErrorResponse, ListwiseRequest, ListwiseResponse

__version__ = "0.1.0"

__all__ = [
    "ErrorResponse",
    "ListwiseRequest",
    "ListwiseResponse",
    "PairwiseRequest",
    "PairwiseResponse",
    "__version__",
]
