"""Write the README's playground screenshot: ``python -m tests.support.screenshot [PATH]`` (default docs/playground.png).

It starts ``pcfjudge serve`` on embedded defaults (the simulated judge), judges the first built-in example in
headless chromium and saves the page, with the same code the browser tests run.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.support.basics import ROOT
from tests.support.browser import capture, chromium
from tests.support.processes import serve_process

DEFAULT_OUT = ROOT / "docs" / "playground.png"


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else DEFAULT_OUT
    with serve_process() as url, chromium() as browser:
        result = capture(browser, url, out)
    diagnostics = result["diagnostics"]
    print(f"wrote {out}: winners {result['winners']}, direct {diagnostics['direct_winners']}, K={result['k']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
