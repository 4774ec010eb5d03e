"""The HTTP layer: ``create_app`` (``app``) and, grouped so each is found at a glance,

``middleware/``  the ASGI layers every request passes first, outermost first: ``request`` (request id, metrics,
                 access log, the last-resort 500), ``shutdown``, ``auth`` (keys, quotas, fair share), ``body``
                 (size and time limits, disconnect watch);
``routes/``      one thin module per front door (``listwise``, ``pairwise``, ``rerank``, ``reward`` and
                 ``reward_adapters``) and the service routes (``health``, ``metrics``, ``playground``);
``schemas/``     each front door's request and response models, and what they share (``common``);
``errors``       one error body for everything (``deps``: the ``Services`` dependency; ``examples``: OpenAPI examples).

Every front door has the same shape: its schema module, its thin route (parse → the door's domain code → shape), and
a domain package below the HTTP layer that never imports FastAPI: ``pcfjudge.listwise`` and ``pcfjudge.pairwise``
(request → task, result → response; the judging itself is ``pcfjudge.judging``'s), ``pcfjudge.rerank`` and
``pcfjudge.reward``.
"""
