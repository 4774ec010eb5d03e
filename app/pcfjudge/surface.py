"""The in-process API for tools: the lab (``pcfjudge_lab``: eval, bench, calibrate, the fake provider) and notebooks.

``pcfjudge`` itself exports the HTTP contract (request and response models) and the client. This module exports the
rest of what a tool running the service's own code in its process may use, and nothing else; the lab imports
``pcfjudge`` only through here and the top-level package (``tests/test_layout.py`` holds it to that). Everything
else under ``pcfjudge.*`` is internal and may change in any release without notice; a name here changes only with
a note in docs/development.md ("The surface for tools"), and whoever changes the module behind a name keeps it
working here.

The names, by what they are for:

* **building the service in process**: ``Settings``, ``Services`` (``Services.build(settings)``, then
  ``services.judge``), ``create_app`` (the ASGI app ``pcfjudge serve`` runs), ``listwise_in_process`` (what
  ``POST /judge/listwise`` does, without HTTP), ``log_config`` and ``tracing`` (the OpenTelemetry module);
* **judging**: ``Judge``, ``prompt_style``, ``JudgingFailed``; the listwise and pairwise tasks and their plans
  (``ListwiseTask``, ``ListwiseResult``, ``ListwiseMode``, ``RunPlan``, ``plan_runs``, ``PairwiseTask``,
  ``PassName``, ``PlannedPass``, ``plan_passes``); one provider call (``CallRunner``, ``CallSpec``,
  ``CallOutcome``) and how a judgment's calls run (``Watch``); ``DecodingParams``, ``CacheMode``, ``CallKind``, ``Usage``, ``usd``, ``LABELS``, ``MAX_K``;
* **models and backends**: ``ResolvedModel``, ``Jury``, ``ModelError``, ``JudgeCall`` (what a backend is asked;
  ``ChatPayload``, a chat call's own messages),
  ``OpenAIBackend`` and ``build_openai`` (an OpenAI-wire backend), the simulated judge (``SimJudge``,
  ``SimParams``, ``shaped``);
* **consensus and prompts**: the modules ``consensus`` (listwise), ``apoc`` (pairwise) and ``jury``; the run
  records (``RunJudgments``, ``CandidateJudgment``); windows (``WindowSpec``, ``WindowRanking``, ``ranking_of``,
  ``run_values``); adaptive K (``Adaptive``, ``Waves``, ``StopRule``, ``max_k``, ``permutation_schedule``);
  ``check_estimation``; prompts and their version constants (``Prompt``, ``PromptStyle``, ``DEFAULT_STYLE``,
  ``render_listwise``, ``render_pairwise``, ``render_keyed``, ``read_blocks``, ``new_nonce``,
  ``listwise_version``, ``pairwise_version``, ``listwise_schema_v2``, ``pairwise_schema_v2``, ``parse_listwise``;
  ``recognise_template``, the chat door's templates: a framework's judge prompt, its candidates and its parser);
* **calibration**: ``Reliability``, ``Book``, ``compared``, ``correlation_matrix``, ``effective_jurors``,
  ``error_correlation``, ``jury_weights``, ``Shift``, ``MCNEMAR``; the store ``pcfjudge serve`` reads them from
  (``ReliabilityStore``, ``open_store``, ``StoreError``);
* **offline batches**: ``BatchJob``, ``BatchError``, ``sdk_errors``, ``Probe``, ``confirm``;
* **files**: ``JsonlAppender`` (append-only JSON lines, one writer).

Every name is imported from its module on first use, so ``import pcfjudge.surface`` (and a tool's ``--help``) loads
nothing of the service.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pcfjudge.api.app import create_app
    from pcfjudge.backends.base import ChatPayload, JudgeCall
    from pcfjudge.backends.openai_backend import OpenAIBackend, build_openai
    from pcfjudge.backends.registry import Jury, ModelError, ResolvedModel
    from pcfjudge.backends.sim import SimJudge, SimParams, shaped
    from pcfjudge.batch.ask import confirm
    from pcfjudge.batch.job import BatchError, BatchJob, sdk_errors
    from pcfjudge.batch.probe import Probe
    from pcfjudge.cache.reliability_store import ReliabilityStore, StoreError, open_store
    from pcfjudge.doors.listwise.listwise_protocol import ListwiseRequest, ListwiseResponse
    from pcfjudge.engine.failures import JudgingFailed
    from pcfjudge.engine.judge import Judge, prompt_style
    from pcfjudge.engine.listwise_runs import ListwiseResult, ListwiseTask, RunPlan, plan_runs
    from pcfjudge.engine.listwise_runs import Mode as ListwiseMode
    from pcfjudge.engine.pairwise_passes import PairwiseTask, PassName, PlannedPass, plan_passes
    from pcfjudge.engine.progress import Watch
    from pcfjudge.engine.runner import CallOutcome, CallRunner, CallSpec
    from pcfjudge.jsonl import JsonlAppender
    from pcfjudge.judging import apoc, consensus, jury
    from pcfjudge.judging.adaptive import StopRule
    from pcfjudge.judging.drift import MCNEMAR, Shift
    from pcfjudge.judging.estimation import check_estimation
    from pcfjudge.judging.pairwise_prompts import pairwise_schema_v2, pairwise_version, render_keyed, render_pairwise
    from pcfjudge.judging.parse import parse_listwise
    from pcfjudge.judging.permutations import max_k
    from pcfjudge.judging.permutations import schedule as permutation_schedule
    from pcfjudge.judging.prompts import (
        DEFAULT_STYLE,
        Prompt,
        PromptStyle,
        listwise_schema_v2,
        listwise_version,
        new_nonce,
        read_blocks,
        render_listwise,
    )
    from pcfjudge.judging.reliability import (
        Book,
        Reliability,
        compared,
        correlation_matrix,
        effective_jurors,
        error_correlation,
        jury_weights,
    )
    from pcfjudge.judging.run_records import CandidateJudgment, RunJudgments
    from pcfjudge.judging.templates.template_registry import recognise as recognise_template
    from pcfjudge.judging.waves import Adaptive, Waves
    from pcfjudge.judging.window_rounds import WindowRanking, WindowSpec, least_calls, ranking_of, run_values
    from pcfjudge.services import Services
    from pcfjudge.settings import Settings
    from pcfjudge.telemetry import tracing
    from pcfjudge.telemetry.logs import log_config
    from pcfjudge.types import LABELS, MAX_K, CacheMode, CallKind, DecodingParams, Usage, usd

_MODULES = {  # module → the names this surface takes from it (an "x as y" is written "x:y")
    "pcfjudge.api.app": ("create_app",),
    "pcfjudge.backends.base": ("ChatPayload", "JudgeCall"),
    "pcfjudge.backends.openai_backend": ("OpenAIBackend", "build_openai"),
    "pcfjudge.backends.registry": ("Jury", "ModelError", "ResolvedModel"),
    "pcfjudge.backends.sim": ("SimJudge", "SimParams", "shaped"),
    "pcfjudge.batch.ask": ("confirm",),
    "pcfjudge.batch.job": ("BatchError", "BatchJob", "sdk_errors"),
    "pcfjudge.batch.probe": ("Probe",),
    "pcfjudge.cache.reliability_store": ("ReliabilityStore", "StoreError", "open_store"),
    "pcfjudge.engine.failures": ("JudgingFailed",),
    "pcfjudge.engine.judge": ("Judge", "prompt_style"),
    "pcfjudge.engine.listwise_runs": ("ListwiseResult", "ListwiseTask", "Mode:ListwiseMode", "RunPlan", "plan_runs"),
    "pcfjudge.engine.pairwise_passes": ("PairwiseTask", "PassName", "PlannedPass", "plan_passes"),
    "pcfjudge.engine.progress": ("Watch",),
    "pcfjudge.engine.runner": ("CallOutcome", "CallRunner", "CallSpec"),
    "pcfjudge.jsonl": ("JsonlAppender",),
    "pcfjudge.judging.adaptive": ("StopRule",),
    "pcfjudge.judging.drift": ("MCNEMAR", "Shift"),
    "pcfjudge.judging.estimation": ("check_estimation",),
    "pcfjudge.judging.pairwise_prompts": ("pairwise_schema_v2", "pairwise_version", "render_keyed", "render_pairwise"),
    "pcfjudge.judging.parse": ("parse_listwise",),
    "pcfjudge.judging.permutations": ("max_k", "schedule:permutation_schedule"),
    "pcfjudge.judging.prompts": (
        "DEFAULT_STYLE",
        "Prompt",
        "PromptStyle",
        "listwise_schema_v2",
        "listwise_version",
        "new_nonce",
        "read_blocks",
        "render_listwise",
    ),
    "pcfjudge.judging.reliability": (
        "Book",
        "Reliability",
        "compared",
        "correlation_matrix",
        "effective_jurors",
        "error_correlation",
        "jury_weights",
    ),
    "pcfjudge.judging.run_records": ("CandidateJudgment", "RunJudgments"),
    "pcfjudge.judging.templates.template_registry": ("recognise:recognise_template",),
    "pcfjudge.judging.waves": ("Adaptive", "Waves"),
    "pcfjudge.judging.window_rounds": ("WindowRanking", "WindowSpec", "least_calls", "ranking_of", "run_values"),
    "pcfjudge.services": ("Services",),
    "pcfjudge.settings": ("Settings",),
    "pcfjudge.telemetry.logs": ("log_config",),
    "pcfjudge.types": ("CacheMode", "CallKind", "DecodingParams", "LABELS", "MAX_K", "Usage", "usd"),
}
_SUBMODULES = {"apoc": "pcfjudge.judging.apoc", "consensus": "pcfjudge.judging.consensus"}
_SUBMODULES |= {"jury": "pcfjudge.judging.jury", "tracing": "pcfjudge.telemetry.tracing"}

_LAZY: dict[str, tuple[str, str]] = {  # exported name → (module, its name there)
    exported: (module, own)
    for module, names in _MODULES.items()
    for own, _, alias in (name.partition(":") for name in names)
    for exported in (alias or own,)
}


def __getattr__(name: str) -> Any:
    """Each name imported from its module on first use (see the module's docstring)."""
    if name in _SUBMODULES:
        value: Any = importlib.import_module(_SUBMODULES[name])
    elif name in _LAZY:
        module, own = _LAZY[name]
        value = getattr(importlib.import_module(module), own)
    else:
        raise AttributeError(f"module 'pcfjudge.surface' has no attribute {name!r}")
    globals()[name] = value
    return value


async def listwise_in_process(
    services: Services, body: ListwiseRequest, request_id: str = "in-process"
) -> tuple[ListwiseResult, ListwiseResponse]:
    """What ``POST /judge/listwise`` does, in this process and without HTTP: the body becomes a task (refused as the
    route refuses it, ``pcfjudge.errors``' exceptions), ``services.judge`` judges it, and the result is shaped into
    the response model (with its runs). Returns both: the result carries what the response leaves out (backend calls,
    cache hits)."""
    from pcfjudge.doors.listwise.listwise_plan import build_task  # on first use, as every name here
    from pcfjudge.doors.listwise.listwise_response import to_response  # on first use, as every name here

    result = await services.judge.listwise(build_task(body, services.settings, services.judge))
    return result, to_response(result, request_id, True)


__all__ = [
    "DEFAULT_STYLE",
    "LABELS",
    "MAX_K",
    "MCNEMAR",
    "Adaptive",
    "BatchError",
    "BatchJob",
    "Book",
    "CacheMode",
    "CallKind",
    "CallOutcome",
    "CallRunner",
    "CallSpec",
    "CandidateJudgment",
    "ChatPayload",
    "DecodingParams",
    "JsonlAppender",
    "Judge",
    "JudgeCall",
    "JudgingFailed",
    "Jury",
    "ListwiseMode",
    "ListwiseResult",
    "ListwiseTask",
    "ModelError",
    "OpenAIBackend",
    "PairwiseTask",
    "PassName",
    "PlannedPass",
    "Probe",
    "Prompt",
    "PromptStyle",
    "Reliability",
    "ReliabilityStore",
    "ResolvedModel",
    "RunJudgments",
    "RunPlan",
    "Services",
    "Settings",
    "Shift",
    "SimJudge",
    "SimParams",
    "StopRule",
    "StoreError",
    "Usage",
    "Watch",
    "Waves",
    "WindowRanking",
    "WindowSpec",
    "apoc",
    "build_openai",
    "check_estimation",
    "compared",
    "confirm",
    "consensus",
    "correlation_matrix",
    "create_app",
    "effective_jurors",
    "error_correlation",
    "jury",
    "jury_weights",
    "least_calls",
    "listwise_in_process",
    "listwise_schema_v2",
    "listwise_version",
    "log_config",
    "max_k",
    "new_nonce",
    "open_store",
    "pairwise_schema_v2",
    "pairwise_version",
    "parse_listwise",
    "permutation_schedule",
    "plan_passes",
    "plan_runs",
    "prompt_style",
    "ranking_of",
    "read_blocks",
    "recognise_template",
    "render_keyed",
    "render_listwise",
    "render_pairwise",
    "run_values",
    "sdk_errors",
    "shaped",
    "tracing",
    "usd",
]
