"""A local HTTP proxy that misbehaves on purpose in front of a real service: the first requests are answered with a
planned status (e.g. 503 with ``Retry-After``) or a dropped connection, the rest are forwarded unchanged.

    with FlakyProxy(serve_url, ["503", "drop"]) as proxy:   # 1st request: 503, 2nd: connection closed, then forwarded
        httpx.post(f"{proxy.url}/judge/listwise", json=...)
    proxy.seen  # the (method, path, planned action) of every request it received; .peers, .headers alongside
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType

import httpx


class FlakyProxy:
    def __init__(self, upstream: str, plan: list[str], *, retry_after: str | None = "1") -> None:
        self.upstream, self.plan, self.retry_after = upstream, list(plan), retry_after
        self.seen: list[tuple[str, str, str]] = []
        self.peers: list[tuple[str, int]] = []  # the client address of every request (one per kept-alive connection)
        self.headers: list[dict[str, str]] = []  # the headers of every request
        self._lock = threading.Lock()
        self._forward = httpx.Client(base_url=upstream, timeout=60)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> FlakyProxy:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)
        self._forward.close()

    def _next(self, method: str, path: str) -> str:
        with self._lock:
            action = self.plan.pop(0) if self.plan else "forward"
            self.seen.append((method, path, action))
            return action

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                action = proxy._next("POST", self.path)
                proxy.peers.append(self.client_address[:2])
                proxy.headers.append({k.lower(): v for k, v in self.headers.items()})
                if action == "drop":
                    self.close_connection = True
                    self.connection.close()
                    return
                if action != "forward":
                    detail = {"error": "overloaded", "detail": f"injected {action} by the test proxy"}
                    headers = {"Retry-After": proxy.retry_after} if proxy.retry_after else {}
                    self._send(int(action), json.dumps(detail).encode(), headers)
                    return
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")}
                upstream = proxy._forward.post(self.path, content=body, headers=headers)
                kept = {k: v for k, v in upstream.headers.items() if k.lower() in ("content-type", "retry-after")}
                self._send(upstream.status_code, upstream.content, kept)

            def _send(self, status: int, content: bytes, headers: dict[str, str]) -> None:
                self.send_response(status)
                headers.setdefault("Content-Type", "application/json")
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

        return Handler
