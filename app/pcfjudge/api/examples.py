"""A working request body for every operation of the OpenAPI document, so that "Try it out" in Swagger UI (``/docs``)
sends a body the service accepts, not one generated from the schema (``"candidates": ["string"]`` is a 422).

``add_examples`` puts each as its operation's ``application/json`` ``example``; ``pcfjudge.api.routes.playground_routes.install``
applies it to the app's document. tests/api/test_openapi_examples.py holds every operation with a request body to having
one here, valid against the operation's schema and answered 200 by the simulated judge.
"""

from __future__ import annotations

from typing import Any

SPIDER = "How many legs does a spider have?"
CAPITALS = [
    "Carson City is the capital city of the American state of Nevada.",
    "Washington, D.C. (officially the District of Columbia) is the capital of the United States.",
    "Capital punishment is legal in some states of the United States.",
]

EXAMPLES: dict[tuple[str, str], dict[str, Any]] = {
    ("post", "/judge/listwise"): {
        "question": "In which year did the Berlin Wall fall?",
        "candidates": [
            {"id": "a", "text": "1989."},
            {"id": "b", "text": "It fell in 1991, on 3 October."},
            {"id": "c", "text": "I am not sure; possibly the late 1980s."},
        ],
        "k": 3,
        "deadline_ms": 10000,
    },
    ("post", "/judge/pairwise"): {
        "question": "What is the chemical symbol for gold?",
        "response_a": "Ag.",
        "response_b": "Au, from the Latin aurum.",
        "model": ["sim:default", "sim:oracle"],
        "deadline_ms": 10000,
    },
    ("post", "/rerank"): {
        "query": "What is Deep Learning?",
        "texts": ["Deep Learning is not...", "Deep learning is..."],
    },
    ("post", "/v1/rerank"): {
        "model": "rerank-v3.5",
        "query": "What is the capital of the United States?",
        "documents": CAPITALS,
        "top_n": 2,
    },
    ("post", "/v2/rerank"): {
        "model": "rerank-v3.5",
        "query": "What is the capital of the United States?",
        "documents": CAPITALS,
        "top_n": 2,
    },
    ("post", "/v1/reward"): {
        "samples": [
            {"prompt": SPIDER, "response": "Eight.", "reference": "eight"},
            {"prompt": SPIDER, "response": "Six, like an insect.", "reference": "eight"},
        ],
        "deadline_ms": 10000,
    },
    ("post", "/get_reward"): {
        "query": [f"{SPIDER} Eight.", f"{SPIDER} Six, like an insect."],
        "prompts": [SPIDER, SPIDER],
        "labels": ["eight", "eight"],
    },
    ("post", "/v1/reward/one"): {"prompt": SPIDER, "response": "Eight.", "label": "eight"},
    ("post", "/v1/chat/completions"): {  # a framework's own judge prompt; here candidates between pcfjudge's markers
        "messages": [
            {
                "role": "user",
                "content": f"Which answer to {SPIDER!r} is better? Explain briefly, then give your verdict as [[A]] "
                "or [[B]].\n\n<<<candidate A>>>\nSix, like an insect.\n<<<end>>>\n<<<candidate B>>>\nEight.\n<<<end>>>",
            }
        ],
        "temperature": 0,
        "deadline_ms": 10000,
    },
    ("post", "/v1/jobs"): {  # answered 202; GET its Location (in /docs: GET /v1/jobs/{job_id} with the id) for the rest
        "endpoint": "/judge/listwise",
        "request": {
            "question": "In which year did the Berlin Wall fall?",
            "candidates": ["1989.", "It fell in 1991, on 3 October.", "I am not sure; possibly the late 1980s."],
            "k": 3,
        },
    },
}


def add_examples(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with each operation's JSON request body example set (in place; operations absent are skipped)."""
    for (method, path), example in EXAMPLES.items():
        operation = document.get("paths", {}).get(path, {}).get(method)
        if operation is None or "requestBody" not in operation:
            continue
        media = operation["requestBody"].get("content", {}).get("application/json")
        if media is not None:
            media["example"] = example
    return document
