"""The ASGI layers under the app, outermost first: ``request`` (request id, metrics, access log, the last-resort
500), ``shutdown``, ``auth`` (keys, quotas, fair share) and ``body`` (size and time limits, disconnect watch)."""
