"""Check an OIP v2 server against KServe's own Python clients.

    python check_oip_server.py --rest-url http://127.0.0.1:P --grpc-addr 127.0.0.1:G \
        --model NAME [--expect-seasonal-naive] [--skip-rest | --skip-grpc]

Drives kserve 0.20's InferenceRESTClient and InferenceGRPCClient (the clients
KServe transformers and inference graphs use) against a server that serves a
model under carbongate's forecaster tensor contract (docs/ARCHITECTURE.md): health,
model readiness, model metadata (the contract's tensors, L and H), inference
with B=1 and B=3 (REST JSON and binary, gRPC raw and typed contents) and the
error cases (unknown model, wrong shape, wrong datatype). Prints one line per
check ("ok" or "FAIL", the check's name, details) and exits 1 if any check
failed, 2 on bad usage.

Neither client has a model-metadata call: metadata is read with the REST
client's own httpx client (GET /v2/models/NAME) and the gRPC client's own stub
(ModelMetadata). --expect-seasonal-naive also checks the values against the
seasonal-naive model of test/python (last 24 h of history repeated); without
it only shapes, datatypes and finiteness are checked.
"""

import argparse
import asyncio
import logging
import math
import sys

import grpc
import httpx
import numpy as np
from kserve import InferenceGRPCClient, InferenceRESTClient, InferInput, InferRequest, RESTConfig
from kserve.protocol.grpc import grpc_predict_v2_pb2 as pb

START = 1622505600  # 2021-06-01T00:00:00Z, hour-aligned


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

    async def run(self, name, coro, expect=None):
        """Run coro; expect(result) returns (ok, detail)."""
        try:
            res = await coro
        except Exception as exc:  # noqa: BLE001 - a check reports, never raises
            self.result(name, False, f"{type(exc).__name__}: {short(exc)}")
            return None
        ok, detail = expect(res) if expect else (True, "")
        self.result(name, ok, detail)
        return res

    async def expect_error(self, name, make, judge):
        """Run make() (a coroutine factory), which must raise; judge(exc)
        returns (ok, detail). A transport failure (no answer at all: the
        connection was reset or refused) is retried once, since it says
        nothing about the server's error handling."""
        for attempt in (1, 2):
            try:
                res = await make()
            except Exception as exc:  # noqa: BLE001
                if attempt == 1 and isinstance(exc, httpx.TransportError):
                    await asyncio.sleep(0.5)
                    continue
                ok, detail = judge(exc)
                self.result(name, ok, detail)
                return
            self.result(name, False, f"no error, got {short(res)}")
            return


def short(x, n=240):
    s = str(x).replace("\n", " ")
    if isinstance(x, BaseException):
        s = f"{type(x).__name__}: {s}"
    return s if len(s) <= n else s[:n] + "..."


def histories(batch, lookback):
    rows = []
    for b in range(batch):
        j = np.arange(lookback, dtype=np.float64)
        rows.append(200.0 + 10.0 * b + 3.0 * (j % 24) + 0.25 * j)
    return np.asarray(rows, dtype=np.float32)


def forecast_request(model, batch, lookback, binary, hist_type="FP32", hist_len=None, rid=None):
    hist_len = lookback if hist_len is None else hist_len
    h = histories(batch, hist_len)
    if hist_type == "FP64":
        h = h.astype(np.float64)
    starts = np.asarray([[START + 3600 * b] for b in range(batch)], dtype=np.int64)
    hi = InferInput("history", list(h.shape), hist_type)
    hi.set_data_from_numpy(h, binary_data=binary)
    si = InferInput("start_unix", list(starts.shape), "INT64")
    si.set_data_from_numpy(starts, binary_data=binary)
    params = {"binary_data_output": True} if binary else None
    return InferRequest(model_name=model, infer_inputs=[hi, si], request_id=rid or f"check-{batch}",
                        parameters=params), h


def judge_forecast(resp, h, horizon, seasonal):
    outs = {o.name: o for o in resp.outputs}
    if "forecast" not in outs:
        return False, f"no output 'forecast' in {sorted(outs)}"
    out = outs["forecast"]
    if out.datatype != "FP32":
        return False, f"forecast datatype {out.datatype}, want FP32"
    b = h.shape[0]
    if list(out.shape) != [b, horizon]:
        return False, f"forecast shape {list(out.shape)}, want [{b}, {horizon}]"
    fc = out.as_numpy()
    if not np.all(np.isfinite(fc)):
        return False, "forecast has non-finite values"
    if seasonal:
        want = np.tile(h[:, -24:], (1, math.ceil(horizon / 24)))[:, :horizon]
        if not np.array_equal(fc.astype(np.float32), want.astype(np.float32)):
            return False, f"forecast {fc[0, :4]}... differs from seasonal naive {want[0, :4]}..."
    return True, f"forecast FP32 {list(out.shape)}"


def judge_metadata(md, model, lookback, horizon):
    """md: dict with name, inputs, outputs (each name/datatype/shape)."""
    ins = {t["name"]: t for t in md.get("inputs") or []}
    outs = {t["name"]: t for t in md.get("outputs") or []}
    problems = []
    if md.get("name") != model:
        problems.append(f"name {md.get('name')!r}, want {model!r}")
    want_in = {"history": ("FP32", lookback), "start_unix": ("INT64", 1)}
    for name, (dt, width) in want_in.items():
        t = ins.get(name)
        if t is None:
            problems.append(f"no input {name}")
            continue
        shape = [int(x) for x in t["shape"]]
        if t["datatype"] != dt or len(shape) != 2 or not (shape[0] == -1 or shape[0] > 0) or \
                (width is not None and shape[1] != width) or shape[1] <= 0:
            problems.append(f"input {name} {t['datatype']} {shape}, want {dt} [-1|B, {width or 'L'}]")
    extra = sorted(set(ins) - set(want_in))
    if extra:
        problems.append(f"inputs outside the contract: {extra}")
    t = outs.get("forecast")
    if t is None:
        problems.append("no output forecast")
    else:
        shape = [int(x) for x in t["shape"]]
        if t["datatype"] != "FP32" or len(shape) != 2 or (horizon is not None and shape[1] != horizon) or shape[1] <= 0:
            problems.append(f"output forecast {t['datatype']} {shape}, want FP32 [-1|B, {horizon or 'H'}]")
    if problems:
        return False, "; ".join(problems)
    return True, f"history {ins['history']['shape']}, start_unix {ins['start_unix']['shape']}, forecast {outs['forecast']['shape']}"


def http_status(exc):
    resp = getattr(exc, "response", None)
    return getattr(resp, "status_code", None)


def grpc_code(exc):
    """The status code the server answered; None for a client-side failure."""
    if not isinstance(exc, grpc.RpcError) or not hasattr(exc, "code"):
        return None
    if "Failed to create channel" in str(exc.details() if hasattr(exc, "details") else exc):
        return None
    return exc.code()


async def check_rest(c, args):
    rest = InferenceRESTClient(RESTConfig(protocol="v2", retries=0, timeout=args.timeout))
    url, model = args.rest_url, args.model
    try:
        await c.run("rest server live", rest.is_server_live(url), lambda r: (r is True, f"live={r}"))
        await c.run("rest server ready", rest.is_server_ready(url), lambda r: (r is True, f"ready={r}"))
        await c.run("rest model ready", rest.is_model_ready(url, model), lambda r: (r is True, f"ready={r}"))
        await c.run("rest unknown model not ready", rest.is_model_ready(url, "no-such-model"),
                    lambda r: (r is False, f"ready={r}"))

        async def metadata():
            r = await rest._client.get(f"{url.rstrip('/')}/v2/models/{model}")
            r.raise_for_status()
            return r.json()

        md = await c.run("rest model metadata", metadata(),
                         lambda m: judge_metadata(m, model, args.lookback, args.horizon))
        horizon = args.horizon or horizon_of(md)

        for binary in (False, True):
            kind = "binary" if binary else "json"
            for b in (1, 3):
                req, h = forecast_request(model, b, args.lookback, binary)
                await c.run(f"rest infer {kind} B={b}", rest.infer(url, req, model_name=model),
                            lambda r, h=h: judge_forecast(r, h, horizon, args.expect_seasonal_naive))

        req, _ = forecast_request("no-such-model", 1, args.lookback, False)
        await c.expect_error("rest infer unknown model is 404", lambda: rest.infer(url, req, model_name="no-such-model"),
                             lambda e: (http_status(e) == 404, f"status {http_status(e)}: {short(e)}"))
        req, _ = forecast_request(model, 1, args.lookback, False, hist_len=args.lookback - 1)
        await c.expect_error("rest infer wrong shape is 400", lambda: rest.infer(url, req, model_name=model),
                             lambda e: (http_status(e) == 400, f"status {http_status(e)}: {short(e)}"))
        req, _ = forecast_request(model, 1, args.lookback, False, hist_type="FP64")
        await c.expect_error("rest infer wrong datatype is 400", lambda: rest.infer(url, req, model_name=model),
                             lambda e: (http_status(e) == 400, f"status {http_status(e)}: {short(e)}"))
    finally:
        await rest.close()


def horizon_of(md):
    try:
        return int({t["name"]: t for t in md["outputs"]}["forecast"]["shape"][1])
    except Exception:  # noqa: BLE001 - metadata already reported
        return None


async def check_grpc(c, args):
    # retries: grpc's retry policy needs maxAttempts >= 2 (it retries UNAVAILABLE only).
    client = InferenceGRPCClient(args.grpc_addr, timeout=args.timeout, retries=2)
    model = args.model
    try:
        await c.run("grpc server live", client.is_server_live(), lambda r: (r is True, f"live={r}"))
        await c.run("grpc server ready", client.is_server_ready(), lambda r: (r is True, f"ready={r}"))
        await c.run("grpc model ready", client.is_model_ready(model), lambda r: (r is True, f"ready={r}"))

        async def metadata():
            r = await client._client_stub.ModelMetadata(pb.ModelMetadataRequest(name=model), timeout=args.timeout)
            return {
                "name": r.name,
                "inputs": [{"name": t.name, "datatype": t.datatype, "shape": list(t.shape)} for t in r.inputs],
                "outputs": [{"name": t.name, "datatype": t.datatype, "shape": list(t.shape)} for t in r.outputs],
            }

        md = await c.run("grpc model metadata", metadata(),
                         lambda m: judge_metadata(m, model, args.lookback, args.horizon))
        horizon = args.horizon or horizon_of(md)

        for raw in (True, False):
            kind = "raw" if raw else "contents"
            for b in (1, 3):
                req, h = forecast_request(model, b, args.lookback, raw)
                await c.run(f"grpc infer {kind} B={b}", client.infer(req),
                            lambda r, h=h: judge_forecast(r, h, horizon, args.expect_seasonal_naive))

        req, _ = forecast_request("no-such-model", 1, args.lookback, False)
        await c.expect_error("grpc infer unknown model is NOT_FOUND", lambda: client.infer(req),
                             lambda e: (grpc_code(e) == grpc.StatusCode.NOT_FOUND, f"{grpc_code(e)}: {short(e)}"))
        req, _ = forecast_request(model, 1, args.lookback, False, hist_len=args.lookback - 1)
        await c.expect_error("grpc infer wrong shape is INVALID_ARGUMENT", lambda: client.infer(req),
                             lambda e: (grpc_code(e) == grpc.StatusCode.INVALID_ARGUMENT, f"{grpc_code(e)}: {short(e)}"))
        req, _ = forecast_request(model, 1, args.lookback, False, hist_type="FP64")
        await c.expect_error("grpc infer wrong datatype is INVALID_ARGUMENT", lambda: client.infer(req),
                             lambda e: (grpc_code(e) == grpc.StatusCode.INVALID_ARGUMENT, f"{grpc_code(e)}: {short(e)}"))
    finally:
        await client.close()


async def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rest-url", help="REST base URL, e.g. http://127.0.0.1:8080")
    p.add_argument("--grpc-addr", help="gRPC address host:port")
    p.add_argument("--model", required=True, help="OIP model name")
    p.add_argument("--lookback", type=int, default=168, help="L the model must declare (default 168)")
    p.add_argument("--horizon", type=int, default=96, help="H the model must declare (default 96; 0: any)")
    p.add_argument("--expect-seasonal-naive", action="store_true",
                   help="check values against the seasonal-naive test model")
    p.add_argument("--timeout", type=float, default=20.0, help="per-call timeout in seconds")
    p.add_argument("--verbose", action="store_true", help="keep the clients' own error logging")
    args = p.parse_args(argv)
    if not args.verbose:
        # The clients log every failed call with a traceback; the expected
        # errors of the error checks would drown the report.
        logging.getLogger("kserve").setLevel(logging.CRITICAL)
    if args.horizon == 0:
        args.horizon = None
    if not args.rest_url and not args.grpc_addr:
        p.error("give --rest-url, --grpc-addr or both")
    c = Checker()
    if args.rest_url:
        await check_rest(c, args)
    if args.grpc_addr:
        await check_grpc(c, args)
    print(f"{c.passed} checks passed, {c.failed} checks failed", flush=True)
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
