"""After every engine test: each engine still alive, or the test fails naming the signal it died of and the likely
cause (a dead engine otherwise shows up as a 502 "cannot reach the endpoint"). ``engine_pair``: two llama-server
processes started once for the package (the jury's two jurors, the fleet's two endpoints)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.engine import RUNNING, SECOND_MODEL_NAME, died, llama_server, second_gguf_path


@pytest.fixture(scope="package")
def engine_pair() -> Iterator[tuple[str, str]]:
    """SmolLM2-135M as shipped (Q4_1, served as ``smollm2``) and re-quantized to Q4_0 (``smollm2-q4_0``,
    scripts/second_model.sh): their /v1 base URLs."""
    with (
        llama_server() as first,
        llama_server(model=second_gguf_path(), name=SECOND_MODEL_NAME) as second,
    ):
        yield first, second


@pytest.fixture(autouse=True)
def engine_alive() -> Iterator[None]:
    yield
    for name, proc in list(RUNNING.values()):
        if proc.poll() is not None:
            pytest.fail(str(died(name, proc, "during this test")), pytrace=False)
