"""Check an MLflow model-registry server against MLflow's own Python client.

    python check_mlflow_client.py --registry-uri http://127.0.0.1:P \
        --source s3://bucket/models/m [--expect-file MLmodel=SHA256 ...] \
        [--prefix NAME] [--token T] [--expect-auth] [--keep]

Drives mlflow.MlflowClient (its REST store, the client every MLflow user
runs) against any server that speaks MLflow's model-registry REST API — a
real `mlflow server`, or carbongate's own registry — so one script is the
conformance check for both. It covers registered models (create, get,
search with name =/LIKE/ILIKE, tags.<key> and paging, update, rename,
delete, tags), model versions (create, get, update, search and paging,
tags, delete, numbering), stages (transition, archive_existing_versions,
get_latest_versions), aliases (set, move, get by alias, delete, reserved
and invalid names) and the error codes for missing resources, duplicates
and bad input. It then resolves models:/NAME@ALIAS, models:/NAME/VERSION
and models:/NAME/STAGE with mlflow.artifacts.download_artifacts (which
asks the server for the download URI and reads the model directory from
S3) and compares the downloaded files with --expect-file NAME=SHA256.

Prints one line per check ("ok" or "FAIL", the check's name, details) and
exits 1 if any check failed, 2 on bad usage.

Every name starts with --prefix (default: a random one), so runs against a
shared server do not collide; the models are deleted at the end unless
--keep. S3 access for the download uses the usual variables
(MLFLOW_S3_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
AWS_DEFAULT_REGION). --token (default $MLFLOW_TRACKING_TOKEN) is sent as
a bearer token; --expect-auth also checks that requests without it, or
with a wrong one, are refused.

Note for server authors: MlflowClient.search_registered_models appends
"AND tag.`mlflow.prompt.is_prompt` != 'true'" to every filter (and sends
it alone when there is none), so a server must accept the singular `tag.`
prefix, backquoted keys and != on tags.
"""

import argparse
import hashlib
import logging
import os
import pathlib
import sys
import tempfile
import uuid
import warnings

# Bounded client calls (MLflow's defaults retry 7 times for minutes) and no
# telemetry: set before mlflow is imported.
os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "1")
os.environ.setdefault("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "1")
os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "30")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("DO_NOT_TRACK", "true")

import mlflow  # noqa: E402
import requests  # noqa: E402
from mlflow import MlflowClient  # noqa: E402
from mlflow.exceptions import MlflowException  # noqa: E402

MISSING = "RESOURCE_DOES_NOT_EXIST"
EXISTS = "RESOURCE_ALREADY_EXISTS"
INVALID = "INVALID_PARAMETER_VALUE"
META_FILE = "registered_model_meta"  # written by the client into models:/ downloads


class Checker:
    def __init__(self):
        self.failed = 0
        self.passed = 0

    def result(self, name, ok, detail=""):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        line = f"{'ok  ' if ok else 'FAIL'} {name}"
        if detail:
            line += f": {detail}"
        print(line, flush=True)

    def run(self, name, fn, expect=None):
        """Call fn; expect(result) returns (ok, detail). Returns the result or None."""
        try:
            res = fn()
        except Exception as exc:  # noqa: BLE001 - a check reports, never raises
            self.result(name, False, describe(exc))
            return None
        try:
            ok, detail = expect(res) if expect else (True, "")
        except Exception as exc:  # noqa: BLE001
            ok, detail = False, f"checking the result: {describe(exc)}"
        self.result(name, ok, detail)
        return res

    def error(self, name, fn, code):
        """Call fn, which must raise an MlflowException with error_code code."""
        try:
            res = fn()
        except MlflowException as exc:
            ok = exc.error_code == code
            self.result(name, ok, code if ok else f"{exc.error_code}, want {code}: {short(exc.message)}")
            return
        except Exception as exc:  # noqa: BLE001
            self.result(name, False, f"{describe(exc)}, want MlflowException {code}")
            return
        self.result(name, False, f"no error, got {short(res)}; want {code}")


def describe(exc):
    code = getattr(exc, "error_code", None)
    return f"{type(exc).__name__}{f' {code}' if code else ''}: {short(exc)}"


def short(x, n=300):
    s = str(x).replace("\n", " ")
    return s if len(s) <= n else s[:n] + "..."


def compare(*pairs):
    """pairs of (label, got, want) -> (all equal, detail naming the mismatches)."""
    bad = [f"{label}={got!r}, want {want!r}" for label, got, want in pairs if got != want]
    if bad:
        return False, "; ".join(bad)
    return True, ", ".join(f"{label}={got!r}" for label, got, _ in pairs[:3])


def names(paged):
    return [m.name for m in paged]


def versions(mvs):
    return sorted(str(mv.version) for mv in mvs)


def check_registered_models(c, cl, p):
    a, b, g, d = f"{p}-alpha", f"{p}-beta", f"{p}-gamma", f"{p}-delta"
    tags = {"zone": "DE", "signal": "carbon_intensity"}
    c.run("create registered model", lambda: cl.create_registered_model(a, tags=tags, description="first"),
          lambda rm: compare(("name", rm.name, a), ("tags", rm.tags, tags), ("description", rm.description, "first"),
                             ("creation_timestamp>0", (rm.creation_timestamp or 0) > 0, True)))
    c.error("create duplicate registered model", lambda: cl.create_registered_model(a), EXISTS)
    c.run("get registered model", lambda: cl.get_registered_model(a),
          lambda rm: compare(("name", rm.name, a), ("tags", rm.tags, tags), ("description", rm.description, "first"),
                             ("latest_versions", rm.latest_versions, [])))
    c.error("get missing registered model", lambda: cl.get_registered_model(f"{p}-missing"), MISSING)
    c.run("create more registered models", lambda: [cl.create_registered_model(b, tags={"zone": "SE"}),
                                                    cl.create_registered_model(g, tags={"zone": "PL"})])

    like = f"name LIKE '{p}-%'"
    c.run("search name LIKE", lambda: cl.search_registered_models(like, order_by=["name ASC"]),
          lambda r: compare(("names", names(r), [a, b, g])))
    c.run("search name =", lambda: cl.search_registered_models(f"name = '{a}'"),
          lambda r: compare(("names", names(r), [a])))
    c.run("search name !=", lambda: cl.search_registered_models(f"{like} AND name != '{a}'", order_by=["name ASC"]),
          lambda r: compare(("names", names(r), [b, g])))
    c.run("search name ILIKE", lambda: cl.search_registered_models(f"name ILIKE '{p.upper()}-%'", order_by=["name"]),
          lambda r: compare(("names", names(r), [a, b, g])))
    c.run("search tags.zone", lambda: cl.search_registered_models(f"{like} AND tags.zone = 'SE'"),
          lambda r: compare(("names", names(r), [b])))
    c.run("search no match", lambda: cl.search_registered_models(f"name = '{p}-nothing'"),
          lambda r: compare(("names", names(r), []), ("token", r.token or None, None)))
    c.run("search order DESC", lambda: cl.search_registered_models(like, order_by=["name DESC"]),
          lambda r: compare(("names", names(r), [g, b, a])))
    page1 = c.run("search page 1", lambda: cl.search_registered_models(like, max_results=2, order_by=["name ASC"]),
                  lambda r: compare(("names", names(r), [a, b]), ("has token", bool(r.token), True)))
    if page1 is not None and page1.token:
        c.run("search page 2", lambda: cl.search_registered_models(like, max_results=2, order_by=["name ASC"],
                                                                    page_token=page1.token),
              lambda r: compare(("names", names(r), [g]), ("token", r.token or None, None)))
    c.error("search invalid filter", lambda: cl.search_registered_models("name ~ 'x'"), INVALID)

    c.run("update registered model", lambda: cl.update_registered_model(a, description="updated"),
          lambda rm: compare(("description", rm.description, "updated")))
    c.run("get updated registered model", lambda: cl.get_registered_model(a),
          lambda rm: compare(("description", rm.description, "updated"),
                             ("last_updated>=created", rm.last_updated_timestamp >= rm.creation_timestamp, True)))
    c.error("update missing registered model", lambda: cl.update_registered_model(f"{p}-missing", description="x"),
            MISSING)

    c.run("set registered model tag", lambda: (cl.set_registered_model_tag(a, "horizon", "96"),
                                               cl.get_registered_model(a))[1],
          lambda rm: compare(("tags[horizon]", rm.tags.get("horizon"), "96")))
    c.run("overwrite registered model tag", lambda: (cl.set_registered_model_tag(a, "horizon", "48"),
                                                     cl.get_registered_model(a))[1],
          lambda rm: compare(("tags[horizon]", rm.tags.get("horizon"), "48")))
    c.run("delete registered model tag", lambda: (cl.delete_registered_model_tag(a, "horizon"),
                                                  cl.get_registered_model(a))[1],
          lambda rm: compare(("tags", rm.tags, tags)))
    c.error("set tag on missing registered model", lambda: cl.set_registered_model_tag(f"{p}-missing", "k", "v"),
            MISSING)

    # MlflowClient.rename_registered_model returns None whatever the server answers.
    c.run("rename registered model", lambda: (cl.rename_registered_model(g, d), cl.get_registered_model(d))[1],
          lambda rm: compare(("name", rm.name, d), ("tags", rm.tags, {"zone": "PL"})))
    c.error("get old name after rename", lambda: cl.get_registered_model(g), MISSING)
    c.error("rename onto existing name", lambda: cl.rename_registered_model(d, a), EXISTS)
    c.error("rename missing registered model", lambda: cl.rename_registered_model(f"{p}-missing", f"{p}-x"), MISSING)

    c.run("delete registered model", lambda: cl.delete_registered_model(b))
    c.error("get deleted registered model", lambda: cl.get_registered_model(b), MISSING)
    c.error("delete missing registered model", lambda: cl.delete_registered_model(b), MISSING)
    return a


def check_model_versions(c, cl, p, a, source):
    def create(n, lookback):
        return cl.create_model_version(a, source, tags={"lookback": lookback}, description=f"v{n}",
                                       await_creation_for=30)

    c.run("create model version", lambda: create(1, "168"),
          lambda mv: compare(("version", str(mv.version), "1"), ("name", mv.name, a), ("source", mv.source, source),
                             ("current_stage", mv.current_stage, "None"), ("status", mv.status, "READY"),
                             ("tags", mv.tags, {"lookback": "168"}), ("description", mv.description, "v1")))
    c.run("create model versions 2 and 3", lambda: [create(2, "72"), create(3, "168")],
          lambda mvs: compare(("versions", [str(mv.version) for mv in mvs], ["2", "3"])))
    c.error("create version of missing model", lambda: cl.create_model_version(f"{p}-missing", source), MISSING)
    c.run("get model version", lambda: cl.get_model_version(a, "2"),
          lambda mv: compare(("version", str(mv.version), "2"), ("tags", mv.tags, {"lookback": "72"}),
                             ("source", mv.source, source), ("creation_timestamp>0", mv.creation_timestamp > 0, True)))
    c.error("get missing model version", lambda: cl.get_model_version(a, "99"), MISSING)
    c.run("registered model latest_versions", lambda: cl.get_registered_model(a),
          lambda rm: compare(("latest", [(str(v.version), v.current_stage) for v in rm.latest_versions],
                              [("3", "None")])))
    c.run("update model version", lambda: cl.update_model_version(a, "2", description="second"),
          lambda mv: compare(("description", mv.description, "second")))
    c.error("update missing model version", lambda: cl.update_model_version(a, "99", description="x"), MISSING)

    by_name = f"name = '{a}'"
    c.run("search model versions by name", lambda: cl.search_model_versions(by_name),
          lambda r: compare(("versions", versions(r), ["1", "2", "3"])))
    c.run("search model versions by tag", lambda: cl.search_model_versions(f"{by_name} AND tags.lookback = '168'"),
          lambda r: compare(("versions", versions(r), ["1", "3"])))
    page1 = c.run("search model versions page 1",
                  lambda: cl.search_model_versions(by_name, max_results=2, order_by=["version_number ASC"]),
                  lambda r: compare(("versions", [str(v.version) for v in r], ["1", "2"]),
                                    ("has token", bool(r.token), True)))
    if page1 is not None and page1.token:
        c.run("search model versions page 2",
              lambda: cl.search_model_versions(by_name, max_results=2, order_by=["version_number ASC"],
                                               page_token=page1.token),
              lambda r: compare(("versions", [str(v.version) for v in r], ["3"]), ("token", r.token or None, None)))

    c.run("set model version tag", lambda: (cl.set_model_version_tag(a, "2", "validated", "true"),
                                            cl.get_model_version(a, "2"))[1],
          lambda mv: compare(("tags", mv.tags, {"lookback": "72", "validated": "true"})))
    c.run("delete model version tag", lambda: (cl.delete_model_version_tag(a, "2", "validated"),
                                               cl.get_model_version(a, "2"))[1],
          lambda mv: compare(("tags", mv.tags, {"lookback": "72"})))
    c.error("set tag on missing model version", lambda: cl.set_model_version_tag(a, "99", "k", "v"), MISSING)


def check_stages(c, cl, p, a):
    def stage(v, s, archive=False):
        return cl.transition_model_version_stage(a, v, s, archive_existing_versions=archive)

    c.run("transition to Staging", lambda: stage("1", "Staging"),
          lambda mv: compare(("current_stage", mv.current_stage, "Staging")))
    c.run("transition to Production", lambda: stage("2", "Production"),
          lambda mv: compare(("current_stage", mv.current_stage, "Production")))
    c.run("transition archiving existing versions", lambda: stage("3", "Production", archive=True),
          lambda mv: compare(("current_stage", mv.current_stage, "Production")))
    c.run("previous Production version archived", lambda: cl.get_model_version(a, "2"),
          lambda mv: compare(("current_stage", mv.current_stage, "Archived")))
    c.error("transition to invalid stage", lambda: stage("1", "Shipping"), INVALID)
    c.error("transition missing model version", lambda: stage("99", "Staging"), MISSING)
    c.run("get_latest_versions Production", lambda: cl.get_latest_versions(a, stages=["Production"]),
          lambda r: compare(("versions", versions(r), ["3"])))
    c.run("get_latest_versions all stages", lambda: cl.get_latest_versions(a),
          lambda r: compare(("stage:version", sorted(f"{v.current_stage}:{v.version}" for v in r),
                             ["Archived:2", "Production:3", "Staging:1"])))
    c.error("get_latest_versions missing model", lambda: cl.get_latest_versions(f"{p}-missing"), MISSING)


def check_aliases(c, cl, p, a):
    c.run("set alias", lambda: (cl.set_registered_model_alias(a, "champion", "2"),
                                cl.get_model_version_by_alias(a, "champion"))[1],
          lambda mv: compare(("version", str(mv.version), "2"), ("aliases", mv.aliases, ["champion"])))
    c.run("move alias", lambda: (cl.set_registered_model_alias(a, "champion", "3"),
                                 cl.get_model_version_by_alias(a, "champion"))[1],
          lambda mv: compare(("version", str(mv.version), "3"), ("aliases", mv.aliases, ["champion"])))
    c.run("moved alias left old version", lambda: cl.get_model_version(a, "2"),
          lambda mv: compare(("aliases", mv.aliases, [])))
    c.run("second alias", lambda: (cl.set_registered_model_alias(a, "challenger", "1"),
                                   cl.get_registered_model(a))[1],
          lambda rm: compare(("aliases", rm.aliases, {"champion": "3", "challenger": "1"})))
    for alias, why in [("latest", "reserved"), ("LATEST", "reserved"), ("v3", "reserved"), ("bad alias!", "invalid")]:
        c.error(f"{why} alias {alias!r} rejected", lambda al=alias: cl.set_registered_model_alias(a, al, "1"), INVALID)
    c.error("alias on missing model version", lambda: cl.set_registered_model_alias(a, "ghost", "99"), MISSING)
    c.error("alias on missing model", lambda: cl.set_registered_model_alias(f"{p}-missing", "ghost", "1"), MISSING)
    c.run("delete alias", lambda: (cl.delete_registered_model_alias(a, "challenger"),
                                   cl.get_registered_model(a))[1],
          lambda rm: compare(("aliases", rm.aliases, {"champion": "3"})))
    c.error("get deleted alias", lambda: cl.get_model_version_by_alias(a, "challenger"), INVALID)


def check_download(c, cl, a, source, expected, uri):
    c.run("get_model_version_download_uri", lambda: cl.get_model_version_download_uri(a, "3"),
          lambda u: compare(("uri", u, source)))
    for label, model_uri, version in [("alias", f"models:/{a}@champion", "3"),
                                      ("version", f"models:/{a}/1", "1"),
                                      ("stage", f"models:/{a}/Production", "3"),
                                      ("download uri", source, None)]:
        c.run(f"download {label} {model_uri}", lambda mu=model_uri: fetch(mu, uri),
              lambda files, v=version: judge_download(files, expected, v))


def fetch(model_uri, uri):
    """Download model_uri; return {relative path: sha256 or meta text}."""
    with tempfile.TemporaryDirectory(prefix="check-mlflow-") as tmp:
        local = mlflow.artifacts.download_artifacts(artifact_uri=model_uri, dst_path=tmp,
                                                    tracking_uri=uri, registry_uri=uri)
        root = pathlib.Path(local)
        out = {}
        for f in sorted(root.rglob("*")):
            if f.is_file():
                rel = f.relative_to(root).as_posix()
                out[rel] = f.read_text() if rel == META_FILE else hashlib.sha256(f.read_bytes()).hexdigest()
        return out


def judge_download(files, expected, version):
    files = dict(files)
    meta = files.pop(META_FILE, None)
    if version is not None:
        want = f"model_version: '{version}'"
        if meta is None or want not in meta:
            return False, f"{META_FILE}={short(meta)!r}, want it to name version {version}"
    if not expected:
        return bool(files), f"{len(files)} files (no --expect-file given)"
    if files != expected:
        got, want = set(files), set(expected)
        return False, (f"missing {sorted(want - got)}, unexpected {sorted(got - want)}, "
                       f"differing {sorted(k for k in got & want if files[k] != expected[k])}")
    return True, f"{len(files)} files match"


def check_deletes(c, cl, a, source):
    c.run("delete model version", lambda: cl.delete_model_version(a, "3"))
    c.error("get deleted model version", lambda: cl.get_model_version(a, "3"), MISSING)
    c.run("deleting a version drops its aliases", lambda: cl.get_registered_model(a),
          lambda rm: compare(("aliases", rm.aliases, {})))
    c.error("get alias of deleted version", lambda: cl.get_model_version_by_alias(a, "champion"), INVALID)
    c.run("version numbers are not reused", lambda: cl.create_model_version(a, source, await_creation_for=30),
          lambda mv: compare(("version", str(mv.version), "4")))
    c.error("delete missing model version", lambda: cl.delete_model_version(a, "99"), MISSING)
    c.run("delete registered model with versions", lambda: cl.delete_registered_model(a))
    c.error("versions of deleted model gone", lambda: cl.get_model_version(a, "1"), MISSING)
    c.run("search versions of deleted model", lambda: cl.search_model_versions(f"name = '{a}'"),
          lambda r: compare(("versions", versions(r), [])))


def check_raw(c, uri, token, prefix, expect_auth):
    """Plain HTTP: the /ajax-api alias and, with --expect-auth, writes refused without the token."""
    path = "/2.0/mlflow/registered-models/search"
    params = {"filter": f"name = '{prefix}-delta'"}
    auth = {"Authorization": f"Bearer {token}"} if token else {}
    c.run("ajax-api prefix", lambda: requests.get(f"{uri}/ajax-api{path}", params=params, headers=auth, timeout=30),
          lambda r: compare(("status", r.status_code, 200),
                            ("names", [m["name"] for m in r.json().get("registered_models", [])], [f"{prefix}-delta"])))
    if expect_auth:
        # Writes need the token; reads stay open (carbongate's default).
        create = "/2.0/mlflow/registered-models/create"
        for label, headers in [("no token", {}), ("wrong token", {"Authorization": "Bearer wrong"})]:
            c.run(f"write with {label} refused",
                  lambda h=headers: requests.post(f"{uri}/api{create}", json={"name": f"{prefix}-unauthorized"},
                                                  headers=h, timeout=30),
                  lambda r: (r.status_code in (401, 403), f"status={r.status_code}"))
        c.run("read without a token allowed", lambda: requests.get(f"{uri}/api{path}", params=params, timeout=30),
              lambda r: (r.status_code == 200, f"status={r.status_code}"))


def cleanup(c, cl, p):
    like = f"name LIKE '{p}-%'"
    for rm in cl.search_registered_models(like, max_results=100):
        cl.delete_registered_model(rm.name)
    c.run("cleanup leaves no models", lambda: cl.search_registered_models(like),
          lambda r: compare(("names", names(r), [])))


def parse_expect(items, parser):
    out = {}
    for item in items:
        rel, sep, digest = item.partition("=")
        if not sep or not rel or len(digest) != 64:
            parser.error(f"--expect-file {item!r}: want RELATIVE/PATH=SHA256 (64 hex digits)")
        out[rel] = digest.lower()
    return out


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--registry-uri", required=True, help="server base URL, e.g. http://127.0.0.1:5000")
    ap.add_argument("--source", required=True, help="model directory for new versions, e.g. s3://bucket/models/m")
    ap.add_argument("--expect-file", action="append", default=[], metavar="PATH=SHA256",
                    help="a file the model directory must hold (repeat; the set must match exactly)")
    ap.add_argument("--prefix", default=f"cgcheck-{uuid.uuid4().hex[:10]}",
                    help="name prefix of every model (lowercase letters, digits, '-')")
    ap.add_argument("--token", default=os.environ.get("MLFLOW_TRACKING_TOKEN", ""), help="bearer token")
    ap.add_argument("--expect-auth", action="store_true", help="check that writes without the token are refused (reads stay open)")
    ap.add_argument("--keep", action="store_true", help="leave the models behind")
    args = ap.parse_args(argv)
    args.registry_uri = args.registry_uri.rstrip("/")
    args.expected = parse_expect(args.expect_file, ap)
    if args.expect_auth and not args.token:
        ap.error("--expect-auth needs --token or $MLFLOW_TRACKING_TOKEN")
    if not args.prefix or args.prefix.lower() != args.prefix or "_" in args.prefix or "%" in args.prefix:
        ap.error("--prefix: lowercase, without '_' or '%' (they are LIKE wildcards)")
    return args


def main(argv=None):
    args = parse_args(argv)
    warnings.simplefilter("ignore")  # stage deprecation and the like: noise on stderr
    logging.getLogger("mlflow").setLevel(logging.WARNING)
    if args.token:
        os.environ["MLFLOW_TRACKING_TOKEN"] = args.token
    uri, p = args.registry_uri, args.prefix
    mlflow.set_tracking_uri(uri)
    mlflow.set_registry_uri(uri)
    cl = MlflowClient(tracking_uri=uri, registry_uri=uri)
    c = Checker()

    if c.run("reach registry", lambda: cl.search_registered_models(max_results=1)) is None:
        return 1
    a = check_registered_models(c, cl, p)
    check_model_versions(c, cl, p, a, args.source)
    check_stages(c, cl, p, a)
    check_aliases(c, cl, p, a)
    check_download(c, cl, a, args.source, args.expected, uri)
    check_raw(c, uri, args.token, p, args.expect_auth)
    check_deletes(c, cl, a, args.source)
    if not args.keep:
        c.run("cleanup", lambda: cleanup(c, cl, p))
    print(f"{c.passed} checks passed, {c.failed} checks failed", flush=True)
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
