"""Write deploy/k8s/base/prometheusrule.yaml from deploy/prometheus/alerts.yml (one source for the alert rules).

    python3 scripts/sync_k8s_rules.py          # rewrite the PrometheusRule
    python3 scripts/sync_k8s_rules.py --check  # exit 1 if it is stale (tests/deploy/test_deploy_k8s.py checks too)

The rule groups are copied as text under ``spec:``, indented, so comments and block scalars stay as written.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ALERTS = ROOT / "deploy" / "prometheus" / "alerts.yml"
RULE = ROOT / "deploy" / "k8s" / "base" / "prometheusrule.yaml"
HEADER = """\
# Generated from deploy/prometheus/alerts.yml by `python3 scripts/sync_k8s_rules.py`: edit that file, then rerun.
# A prometheus-operator Prometheus loads it if its ruleSelector matches these labels (add yours in an overlay).
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: pcfjudge
  labels:
    app.kubernetes.io/name: pcfjudge
    app.kubernetes.io/component: server
spec:
"""


def render(alerts: str) -> str:
    body = "".join(f"  {line}" if line.strip() else "\n" for line in alerts.splitlines(keepends=True))
    return HEADER + body


def main(argv: list[str]) -> int:
    text = render(ALERTS.read_text(encoding="utf-8"))
    if "--check" in argv:
        if RULE.read_text(encoding="utf-8") != text:
            print(f"{RULE} is stale: run python3 scripts/sync_k8s_rules.py", file=sys.stderr)
            return 1
        return 0
    RULE.write_text(text, encoding="utf-8")
    print(f"wrote {RULE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
