"""The HTTP routes: one thin module per front door (``listwise``, ``pairwise``, ``rerank``, ``reward`` with its
framework adapters) and the service routes (``health``, ``metrics``, ``playground``)."""
