"""The playground page and the docs pages over HTTP (in process): packaged assets only, no CDN, not in the schema.

The browser tests (``test_playground_browser.py``) check what a person sees; these check what is served.
"""

from __future__ import annotations

import re
from pathlib import Path

import httpx
from pcfjudge.settings import Settings
from pydantic import SecretStr

from tests.support.basics import ROOT
from tests.support.inprocess import app_client

STATIC = ROOT / "app" / "pcfjudge" / "static"
REFERENCE = re.compile(r'(?:src|href)="([^"]+)"')


def local_references(html: str) -> list[str]:
    return [ref for ref in REFERENCE.findall(html) if not ref.startswith("#")]


async def test_the_page_is_served_at_the_root_with_a_strict_policy(client: httpx.AsyncClient) -> None:
    page = await client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert page.text == (STATIC / "index.html").read_text(encoding="utf-8")
    policy = page.headers["content-security-policy"]
    assert "default-src 'self'" in policy and "script-src 'self';" in policy and "connect-src 'self'" in policy
    assert "unsafe-inline" not in policy and "<script>" not in page.text  # its script is a file, so the policy holds


async def test_everything_the_page_loads_is_packaged_and_served(client: httpx.AsyncClient) -> None:
    """index.html's assets and the modules they import resolve to files in pcfjudge/static, served from /static."""
    html = (STATIC / "index.html").read_text(encoding="utf-8")
    refs = [r for r in local_references(html) if r.startswith("static/")]
    for script in STATIC.glob("*.js"):
        refs += [f"static/{name}" for name in re.findall(r'from "\./([\w.]+)"', script.read_text(encoding="utf-8"))]
    assert {"static/playground.js", "static/render.js", "static/examples.js", "static/playground.css"} <= set(refs)
    for ref in refs:
        served = await client.get(f"/{ref}")
        assert served.status_code == 200, ref
        assert served.content == (STATIC / Path(ref).name).read_bytes()
    for link in ("docs", "redoc", "openapi.json"):  # the page's navigation
        assert link in local_references(html) and (await client.get(f"/{link}")).status_code == 200


async def test_no_page_or_asset_route_is_in_the_openapi_document(client: httpx.AsyncClient) -> None:
    paths = (await client.get("/openapi.json")).json()["paths"]
    assert not {p for p in paths if p == "/" or p.startswith(("/docs", "/redoc", "/static", "/playground"))}, paths


async def test_the_model_picker_hears_of_the_servers_juries_with_the_key_judging_needs() -> None:
    juries = {"panel": ["sim:default", "sim:oracle"]}
    async with app_client(Settings(juries=juries)) as client:
        answer = await client.get("/playground/models")
        assert answer.status_code == 200
        assert answer.json() == {"juries": [{"name": "panel", "jurors": ["sim:default", "sim:oracle"]}]}
    async with app_client() as client:
        assert (await client.get("/playground/models")).json() == {"juries": []}
    key = "playground-picker-key-0123456789"
    async with app_client(Settings(juries=juries, api_keys=SecretStr(f"pg:{key}"))) as client:
        assert (await client.get("/playground/models")).status_code == 401
        allowed = await client.get("/playground/models", headers={"Authorization": f"Bearer {key}"})
        assert allowed.status_code == 200 and allowed.json()["juries"][0]["name"] == "panel"


async def test_the_docs_pages_load_only_packaged_assets(client: httpx.AsyncClient) -> None:
    for path, assets in {
        "/docs": {"/static/vendor/swagger-ui-bundle.js", "/static/vendor/swagger-ui.css"},
        "/redoc": {"/static/vendor/redoc.standalone.js"},
    }.items():
        page = await client.get(path)
        assert page.status_code == 200 and "img-src 'self' data:" in page.headers["content-security-policy"]
        refs = set(local_references(page.text))
        assert assets <= refs and all(r.startswith("/") for r in refs), refs
        assert "https://" not in page.text and "/openapi.json" in page.text
        for ref in refs:
            asset = await client.get(ref)
            assert asset.status_code == 200 and len(asset.content) > 0, ref
    redirect = await client.get("/docs/oauth2-redirect")
    assert redirect.status_code == 200 and "oauth2" in redirect.text.lower()


async def test_a_missing_asset_is_a_json_404(client: httpx.AsyncClient) -> None:
    for path in ("/static/nope.js", "/static/vendor/nope.js", "/static/..%2f..%2f..%2fpyproject.toml"):
        missing = await client.get(path)
        assert missing.status_code == 404, path
        assert missing.json()["error"] == "not_found"
