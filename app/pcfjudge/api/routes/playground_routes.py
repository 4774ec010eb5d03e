"""The browser playground (``GET /``, and ``GET /playground/models`` for its model picker) and the API docs
(``/docs``, ``/redoc``), served from packaged files only.

The page and its script live in ``pcfjudge/static/`` (mounted at ``/static``); Swagger UI and ReDoc come from the copies
the ``fastapi-offline`` package ships (mounted at ``/static/vendor``). Nothing is loaded from a CDN, so the page and
the docs work on an air-gapped network. None of these routes is part of the OpenAPI document.

The metrics and the access log label the page, the docs (``/docs``, ``/redoc``, ``/openapi.json``) and every packaged
file ``static`` (``api.middleware.request.ROUTE_LABEL``), apart from the judging routes and from unmatched paths;
``/playground/models``, an API route, keeps its own label.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import FileResponse, HTMLResponse
from fastapi.staticfiles import StaticFiles
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from pcfjudge.api.examples import add_examples
from pcfjudge.api.middleware.request import ROUTE_LABEL, STATIC_ROUTE
from pcfjudge.errors import ApiError
from pcfjudge.http.deps import ServicesDep

PAGE_DIR = Path(__file__).resolve().parents[2] / "static"  # package data: pcfjudge/static/
STATIC = "/static"
VENDOR = f"{STATIC}/vendor"  # mounted before STATIC, so it wins for its prefix
OAUTH2_REDIRECT = "/docs/oauth2-redirect"

# The page runs only its own script and styles and talks only to this service; untrusted text (candidates, rationales,
# error details) is inserted as text, and this policy makes any slip inert.
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'",
    "Cache-Control": "no-cache",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
}

# The docs pages load only from this service. FastAPI's Swagger UI page starts it with an inline script and both UIs
# inject styles; ReDoc's sidebar credit is an image on a CDN, which this policy stops before it is requested.
DOCS_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self' 'unsafe-inline'; "
    "style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; worker-src 'self' blob:; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'",
    "Referrer-Policy": "no-referrer",
}

router = APIRouter(include_in_schema=False)


def static(app: ASGIApp) -> ASGIApp:
    """``app``, its requests labelled ``static`` in the metrics and the access log."""

    async def labelled(scope: Scope, receive: Receive, send: Send) -> None:
        scope[ROUTE_LABEL] = STATIC_ROUTE
        await app(scope, receive, send)

    return labelled


async def _static_page(request: Request) -> None:  # async: no thread-pool hop
    request.scope[ROUTE_LABEL] = STATIC_ROUTE


PAGE = [Depends(_static_page)]  # a page route's dependencies: labelled ``static``


def install(app: FastAPI) -> None:
    """Mount the packaged assets and add ``/``, ``/docs``, ``/docs/oauth2-redirect`` and ``/redoc``; give the OpenAPI
    document working request examples (``pcfjudge.api.examples``), which "Try it out" in ``/docs`` sends.

    Build the app with ``docs_url=None, redoc_url=None`` so FastAPI's CDN-backed pages are not registered as well.
    """
    app.mount(VENDOR, static(StaticFiles(packages=[("fastapi_offline", "static")])), name="vendor")
    app.mount(STATIC, static(StaticFiles(directory=PAGE_DIR)), name="static")
    app.include_router(router)
    for route in app.routes:  # FastAPI's own /openapi.json (a plain Starlette route: no template in the scope)
        if type(route) is Route and route.path == app.openapi_url:
            route.app = static(route.app)
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:  # built once, on first use, as FastAPI's own
            app.openapi_schema = add_examples(build())
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def _root(request: Request) -> str:
    return str(request.scope.get("root_path", "")).rstrip("/")


def _openapi_url(request: Request) -> str:
    url = request.app.openapi_url
    if url is None:
        raise ApiError("not_found", "the OpenAPI document is disabled on this service, so are its docs")
    return f"{_root(request)}{url}"


@router.get("/", dependencies=PAGE)
async def playground() -> FileResponse:
    """The playground page: judge candidates and see the consensus, the per-run heat map and the direct verdict."""
    return FileResponse(PAGE_DIR / "index.html", media_type="text/html; charset=utf-8", headers=PAGE_HEADERS)


@router.get("/playground/models")
async def playground_models(services: ServicesDep) -> dict[str, Any]:
    """What the page's model picker offers besides single models: this server's juries (PCFJ_JURIES), each with its
    jurors. Not public like the page: with API keys it needs one, as every judging route does."""
    juries = [{"name": name, "jurors": list(jurors)} for name, jurors in services.settings.jury.juries.items()]
    return {"juries": juries}


@router.get("/docs", dependencies=PAGE)
async def swagger_ui(request: Request) -> HTMLResponse:
    root = _root(request)
    page = get_swagger_ui_html(
        openapi_url=_openapi_url(request),
        title=f"{request.app.title} - Swagger UI",
        oauth2_redirect_url=f"{root}{OAUTH2_REDIRECT}",
        swagger_js_url=f"{root}{VENDOR}/swagger-ui-bundle.js",
        swagger_css_url=f"{root}{VENDOR}/swagger-ui.css",
        swagger_favicon_url=f"{root}{STATIC}/favicon.svg",
        swagger_ui_parameters=request.app.swagger_ui_parameters,
    )
    page.headers.update(DOCS_HEADERS)
    return page


@router.get(OAUTH2_REDIRECT, dependencies=PAGE)
async def swagger_ui_redirect() -> HTMLResponse:
    return get_swagger_ui_oauth2_redirect_html()


@router.get("/redoc", dependencies=PAGE)
async def redoc(request: Request) -> HTMLResponse:
    root = _root(request)
    page = get_redoc_html(
        openapi_url=_openapi_url(request),
        title=f"{request.app.title} - ReDoc",
        redoc_js_url=f"{root}{VENDOR}/redoc.standalone.js",
        redoc_favicon_url=f"{root}{STATIC}/favicon.svg",
        with_google_fonts=False,
    )
    page.headers.update(DOCS_HEADERS)
    return page
