"""One call straight to the simulated judge with a framework's messages, as the framework itself would make it."""

from __future__ import annotations

from pcfjudge.backends.registry import ResolvedModel
from pcfjudge.backends.sim import SimBackend, SimParams
from pcfjudge.backends.slots import Slots
from pcfjudge.engine.chat_runs import ChatTask, chat_specs
from pcfjudge.judging.templates.template_registry import recognise
from pcfjudge.types import DecodingParams

SIM = SimBackend(SimParams())


async def straight(messages: list[dict[str, str]]) -> str:
    """The simulated judge's answer to ``messages`` as sent (the caller's own order, one call, no consensus)."""
    pairs = tuple((m["role"], m["content"]) for m in messages)
    task = ChatTask(pairs, recognise(pairs))
    model = ResolvedModel("sim", "default", SIM, Slots(1, 1))
    spec = chat_specs(task, model, DecodingParams())[0]
    assert spec.call.chat is not None and spec.call.chat.messages == pairs  # the caller's messages, unchanged
    return (await SIM.complete(spec.call)).text
