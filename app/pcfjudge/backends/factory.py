"""Build the real-provider backends the settings have keys for, and the judge fleets of PCFJ_MODELS_FILE.

The Anthropic SDK (about 3,000 modules: two thirds of what the service would load, and over a second of its start)
loads with the first Anthropic backend built: a service without an Anthropic key or endpoint never imports it
(``tests/backends/test_backends_anthropic.py``)."""

from __future__ import annotations

from pcfjudge.backends.base import Backend
from pcfjudge.backends.budget import MemoryBudget, RedisBudget
from pcfjudge.backends.fleet import FleetBackend
from pcfjudge.backends.models_file import EndpointSpec, ModelsFileError, load_models_file
from pcfjudge.backends.openai_backend import NO_KEY, build_openai, openai_wire
from pcfjudge.cache.redis_cache import RedisCache
from pcfjudge.settings import Settings


def build_backends(settings: Settings) -> dict[str, Backend]:
    """``openai`` when ``OPENAI_API_KEY`` or ``PCFJ_OPENAI_BASE_URL`` (a local engine needs no key) is set,
    ``anthropic`` when ``ANTHROPIC_API_KEY`` is set, and one OpenAI-compatible backend per ``PCFJ_ENGINES`` entry."""
    backends: dict[str, Backend] = {}
    if settings.providers.openai_api_key is not None or settings.providers.openai_base_url:
        openai_backend = build_openai(settings)
        if openai_backend is not None:
            backends["openai"] = openai_backend
    if settings.providers.anthropic_api_key is not None:
        from pcfjudge.backends.anthropic_backend import build_anthropic  # the SDK, on first use (module docstring)

        anthropic_backend = build_anthropic(settings)
        if anthropic_backend is not None:
            backends["anthropic"] = anthropic_backend
    if settings.providers.engines:
        for name, url in settings.providers.engines.items():
            engine = build_openai(settings, base_url=url)
            if engine is not None:
                backends[name] = engine
    return backends


def build_fleets(settings: Settings, shared: RedisCache | None = None) -> dict[str, FleetBackend]:
    """One ``FleetBackend`` per model name of ``PCFJ_MODELS_FILE`` (none without it); raises ``ModelsFileError``.
    Their rate budgets are counted where the cache is shared (``shared``): in Redis for every replica, else in
    process."""
    if settings.fleets.models_file is None:
        return {}

    budget = RedisBudget(shared) if shared is not None else MemoryBudget()

    specs = load_models_file(settings.fleets.models_file)
    clash = sorted(set(specs) & set(settings.jury.juries))
    if clash:  # a bare model name must name one thing
        raise ModelsFileError(
            f"PCFJ_MODELS_FILE: model_name {', '.join(map(repr, clash))} is also a jury of PCFJ_JURIES; rename one"
        )
    fleets: dict[str, FleetBackend] = {}
    for name, spec in specs.items():
        backends = [build_endpoint(settings, endpoint) for endpoint in spec.endpoints]
        fleets[name] = FleetBackend(
            spec,
            backends,
            budget,
            capacity=settings.fanout.backend_concurrency,
            allowed_fails=settings.fleets.fleet_allowed_fails,
            cooldown_s=settings.fleets.fleet_cooldown_s,
            max_block_s=settings.fleets.fleet_max_block_s,
        )
    return fleets


def build_endpoint(settings: Settings, spec: EndpointSpec) -> Backend:
    """The backend of one fleet endpoint: its own client, key and URL, the service's timeouts and output mode."""
    connections = spec.max_parallel_requests or settings.fanout.backend_concurrency
    if spec.wire == "anthropic":
        from pcfjudge.backends.anthropic_backend import anthropic_endpoint  # the SDK, on first use (module docstring)

        return anthropic_endpoint(settings, spec, connections)

    return openai_wire(settings, spec.api_base, spec.api_key or NO_KEY, connections)
