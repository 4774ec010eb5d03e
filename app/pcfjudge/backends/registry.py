"""Model strings (``provider:model``) to backends, each with its own concurrency limit."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from pcfjudge.backends.base import Backend
from pcfjudge.backends.dialects import Dialects
from pcfjudge.backends.factory import build_backends, build_fleets
from pcfjudge.backends.fleet import FleetBackend
from pcfjudge.backends.sim import SimBackend, SimParams
from pcfjudge.backends.slots import Slots
from pcfjudge.cache.redis_cache import RedisCache
from pcfjudge.settings import Settings

FLEET = "fleet"  # fleet:<model_name>, a model of PCFJ_MODELS_FILE
KNOWN_PROVIDERS = ("openai", "anthropic", "sim")
SIM_MODELS = ("default", "oracle")


class ModelError(ValueError):
    """A model string the client sent cannot be served; the message says how to fix it."""


@dataclass(frozen=True, slots=True)
class ResolvedModel:
    provider: str
    name: str
    backend: Backend
    limit: Slots

    @property
    def string(self) -> str:
        return f"{self.provider}:{self.name}"

    @property
    def jurors(self) -> tuple[ResolvedModel, ...]:
        """The models that judge (one), as a jury's ``jurors``: a request's model is read the same either way."""
        return (self,)

    @property
    def jury(self) -> None:
        return None


@dataclass(frozen=True, slots=True)
class Jury:
    """Several judge models judging as one (docs/juries.md): ``name`` is a PCFJ_JURIES name, or the jurors' model
    strings joined by commas for a list a request sent; ``weights`` sum to 1, in juror order."""

    name: str
    jurors: tuple[ResolvedModel, ...]
    weights: tuple[float, ...]
    calibrated: bool = False
    calibration_version: str = ""  # the prompt version whose calibration records it was weighed (and is read) by

    @property
    def string(self) -> str:
        return self.name

    @property
    def jury(self) -> Jury:
        return self


class Registry:
    """The configured backends; built in the app lifespan, closed with it."""

    def __init__(
        self, settings: Settings, backends: dict[str, Backend] | None = None, shared: RedisCache | None = None
    ) -> None:
        self.settings = settings
        self.backends: dict[str, Backend] = dict(build_backends(settings) if backends is None else backends)
        self.backends.setdefault("sim", SimBackend(sim_params(settings)))
        self._limits = {
            name: Slots(settings.fanout.backend_concurrency, settings.access.max_queued_calls) for name in self.backends
        }
        self.fleets: dict[str, FleetBackend] = build_fleets(settings, shared)
        self._fleet_limits = {
            name: Slots(fleet.capacity, settings.access.max_queued_calls) for name, fleet in self.fleets.items()
        }

    def resolve(self, model: str | None) -> ResolvedModel:
        """A model string (None: the default): ``provider:model``, ``fleet:<model_name>``, or a fleet's bare
        ``model_name`` as LiteLLM's clients send it."""
        if model is not None and not model.strip():
            raise ModelError("model must not be empty; leave it out for the server's default, or " + self.known())
        model = model or self.settings.resolved_default_model()
        provider, sep, name = model.partition(":")
        if not sep and model in self.fleets:
            return self._fleet(model)
        if not sep or not name:
            raise ModelError(f"unknown model {model!r}; {self.known()}")
        if provider == FLEET:
            return self._fleet(name)
        if provider not in KNOWN_PROVIDERS and provider not in self.settings.providers.engines:
            known = ", ".join([*KNOWN_PROVIDERS, *self.settings.providers.engines, *([FLEET] if self.fleets else [])])
            raise ModelError(f"unknown provider {provider!r}; use one of: {known}")
        if provider == "sim" and name not in SIM_MODELS:
            raise ModelError(f"unknown simulated model {name!r}; use sim:default or sim:oracle")
        backend = self.backends.get(provider)
        if backend is None:
            key = "OPENAI_API_KEY" if provider == "openai" else "ANTHROPIC_API_KEY"
            raise ModelError(f"provider {provider!r} is not configured on this server (set {key}); use sim:default")
        return ResolvedModel(provider, name, backend, self._limits[provider])

    def _fleet(self, name: str) -> ResolvedModel:
        fleet = self.fleets.get(name)
        if fleet is None:
            known = ", ".join(f"fleet:{n}" for n in self.fleets) or "none (set PCFJ_MODELS_FILE)"
            raise ModelError(f"unknown fleet {name!r}; the fleets of PCFJ_MODELS_FILE are: {known}")
        return ResolvedModel(FLEET, name, fleet, self._fleet_limits[name])

    def known(self) -> str:
        """What a request may name, for an error message."""
        providers = [p for p in (*KNOWN_PROVIDERS, *self.settings.providers.engines) if p in self.backends]
        named = [f"{p}:<model>" for p in providers if p != "sim"] + [f"sim:{m}" for m in SIM_MODELS]
        fleets = [f"fleet:{n} (or {n})" for n in self.fleets]
        text = "name a model as provider:model: " + ", ".join(named)
        if fleets:
            text += "; or a fleet of PCFJ_MODELS_FILE: " + ", ".join(fleets)
        if self.settings.jury.juries:
            text += "; or a jury of PCFJ_JURIES: " + ", ".join(self.settings.jury.juries)
        return text

    def fleet_models(self) -> list[str]:
        return [f"{FLEET}:{name}" for name in self.fleets]

    def fleet_status(self) -> dict[str, dict[str, object]]:
        """Per fleet (for /readyz): its endpoints by id (health, calls in flight, cooldown and rate-limit block left)
        and the endpoints cooling down after repeated failures."""
        now = asyncio.get_running_loop().time()
        out: dict[str, dict[str, object]] = {}
        for name, fleet in self.fleets.items():
            endpoints = fleet.status(now)
            unhealthy = [e for e, state in endpoints.items() if not state["healthy"]]
            out[name] = {"model": f"{FLEET}:{name}", "endpoints": endpoints, "unhealthy": unhealthy}
        return out

    def describe(self) -> list[str]:
        return sorted(self.backends)

    def endpoints(self) -> dict[str, str]:
        """Base URL per real-provider backend (credentials stripped; keys are never shown)."""
        urls = {name: getattr(backend, "base_url", None) for name, backend in self.backends.items()}
        return {name: url for name, url in sorted(urls.items()) if isinstance(url, str)}

    def dialects(self) -> dict[str, dict[str, object]]:
        """The structured-output dialect each OpenAI-compatible backend sends, and whether the engine has accepted it
        yet (``auto`` learns it from the engine's first refusal; see ``backends.dialects``)."""
        out: dict[str, dict[str, object]] = {}
        for name, backend in sorted(self.backends.items()):
            dialects = getattr(backend, "dialects", None)
            if isinstance(dialects, Dialects):
                out[name] = {"mode": dialects.mode, "dialect": dialects.current, "learned": dialects.learned}
        return out

    async def aclose(self) -> None:
        for backend in self.backends.values():
            await backend.aclose()
        for fleet in self.fleets.values():
            await fleet.aclose()


def sim_params(settings: Settings) -> SimParams:
    return SimParams(
        seed=settings.sim.sim_seed,
        position_bias=settings.sim.sim_position_bias,
        target_accuracy=settings.sim.sim_target_accuracy,
        latency_ms=settings.sim.sim_latency_ms,
        fail_rate=settings.sim.sim_fail_rate,
        latency_tail=settings.sim.sim_latency_tail,
    )
