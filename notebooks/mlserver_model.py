"""Prepare an MLServer model repository for a registered forecaster.

Downloads the model version an alias points at (``models:/<name>@<alias>``)
from an MLflow tracking server, with MLflow's own client, into
``<out>/model`` and writes ``<out>/model-settings.json`` for MLServer's
mlflow runtime (``mlserver_mlflow.MLflowRuntime``) plus a ``settings.json``
that loads it in-process at start-up. Serve it with ``mlserver start <out>``
(ports from MLSERVER_HTTP_PORT / MLSERVER_GRPC_PORT / MLSERVER_METRICS_PORT).

The OIP model name is the registered model's name and the OIP model version
the registered version, so the gateway's provenance names both. Inputs and
outputs are not written: the runtime declares them from the model's
signature (named tensor specs, see 02_train_python_model.ipynb).

Prints one JSON line: {"name", "version", "dir"}. Exit status 2 on bad
usage, 1 when the model cannot be fetched.
"""

import argparse
import json
import os
import sys

import mlflow
from mlflow.artifacts import download_artifacts
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tracking-uri", required=True, help="MLflow tracking / registry URI")
    p.add_argument("--name", required=True, help="registered model, e.g. carbon-forecaster-DE")
    p.add_argument("--alias", default="champion", help="alias to serve (default champion)")
    p.add_argument("--out", required=True, help="directory to create (must not exist or be empty)")
    args = p.parse_args(argv)
    if os.path.exists(args.out) and os.listdir(args.out):
        p.error(f"--out {args.out} is not empty")

    # Set both URIs process-wide: without them MLflow's default is a local
    # sqlite:///mlflow.db, which some code paths fall back to.
    mlflow.set_tracking_uri(args.tracking_uri)
    mlflow.set_registry_uri(args.tracking_uri)
    client = MlflowClient()
    try:
        version = client.get_model_version_by_alias(args.name, args.alias).version
        # Pin the version, so the files match the version named in the settings
        # even if the alias moves meanwhile.
        uri = f"models:/{args.name}/{version}"
        os.makedirs(args.out, exist_ok=True)
        model_dir = download_artifacts(artifact_uri=uri, dst_path=os.path.join(args.out, "model"), tracking_uri=args.tracking_uri)
    except MlflowException as e:
        print(f"mlserver_model.py: {args.name}@{args.alias}: {e.message}", file=sys.stderr)
        return 1

    settings = {"name": args.name, "implementation": "mlserver_mlflow.MLflowRuntime", "parameters": {"uri": model_dir, "version": str(version)}}
    with open(os.path.join(args.out, "model-settings.json"), "w") as f:
        json.dump(settings, f, indent=2)
    with open(os.path.join(args.out, "settings.json"), "w") as f:
        json.dump({"parallel_workers": 0, "load_models_at_startup": True, "metrics_endpoint": None}, f, indent=2)
    print(json.dumps({"name": args.name, "version": str(version), "dir": model_dir}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
