"""The bare FastAPI reference of ``pcfjudge bench http``: what FastAPI itself costs for the service's body and answer.

``python -m pcfjudge_lab.bench.http_echo --port P --response FILE`` serves ``POST /judge/listwise``: FastAPI parses the
JSON body into a dict and the handler answers with the JSON in FILE (a response the service gave for that body),
serialised per request. It runs under the same uvicorn as ``pcfjudge serve`` (same HTTP protocol class, event loop,
keep-alive and logging), with no middleware, validation, cache or judging.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse


def create_echo_app(response: dict[str, Any]) -> FastAPI:
    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)

    @app.post("/judge/listwise")
    async def echo(body: dict[str, Any]) -> JSONResponse:
        return JSONResponse(response)

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    return app


def main() -> None:
    import uvicorn
    from pcfjudge.surface import Settings, log_config

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--response", required=True, help="a JSON file: the answer to every POST")
    parser.add_argument("--log-level", default="warning")
    args = parser.parse_args()
    response = json.loads(Path(args.response).read_text(encoding="utf-8"))
    settings = Settings()
    uvicorn.run(
        create_echo_app(response),
        host="127.0.0.1",
        port=args.port,
        log_level=args.log_level,
        http="pcfjudge.api.header_timeout:HeaderTimeoutProtocol",
        timeout_keep_alive=max(1, round(settings.access.keep_alive_s)),
        access_log=False,
        log_config=log_config(settings.access.log_format, args.log_level),
    )


if __name__ == "__main__":
    main()
