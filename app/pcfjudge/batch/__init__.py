"""Offline judging through provider batch APIs and ``vllm run-batch``, filling the cache the service reads.

The judging path stays the one ``Judge``: a batch run drives it with a ``probe.Probe`` runner that records the calls
no cache entry answers (their cache keys, prompts and validation are the judge's own), ``job.BatchJob`` sends them
in the provider's batch format (``providers``: each body built by the backend's own request builder), and the
results are parsed like live answers and stored in the cache under their keys. The consensus is then computed
by the ordinary path from cache hits: ``pcfjudge eval … --batch``, ``pcfjudge batch`` and, with a shared (Redis)
cache, ``/judge/listwise`` and ``/v1/reward`` all benefit. The state lives in the output directory (``store``).
"""
