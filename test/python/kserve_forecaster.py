"""A KServe Python model server (kserve 0.20) serving a seasonal-naive
forecaster that honours carbongate's forecaster tensor contract, over OIP v2
REST and gRPC.

    python kserve_forecaster.py --http_port P --grpc_port G --model_name NAME

The ports and model name are kserve's own ModelServer flags. kserve 0.20
listens on every interface (uvicorn host "0.0.0.0", gRPC "[::]") with no flag
to change it; this script binds both to FORECASTER_BIND_HOST (default
127.0.0.1) instead, which changes nothing else. Fault knobs
(FORECASTER_NOT_READY_SECONDS, FORECASTER_SLOW_SECONDS, ...) are described in
forecaster_core.py.
"""

import argparse
import asyncio
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import kserve  # noqa: E402
from kserve import InferOutput, InferRequest, InferResponse  # noqa: E402
from kserve.errors import InvalidInput, ModelNotReady  # noqa: E402

import forecaster_core  # noqa: E402


class SeasonalNaive(kserve.Model):
    def __init__(self, name, settings):
        super().__init__(name)
        self.settings = settings
        self.load()

    def load(self):
        self.ready = True
        return self.ready

    async def healthy(self):
        # kserve answers /v2/models/{name}/ready (and gRPC ModelReady) from
        # this; the "not ready" window simulates a model still loading.
        return self.ready and self.settings.ready()

    def get_input_types(self):
        return self.settings.input_metadata()

    def get_output_types(self):
        return self.settings.output_metadata()

    async def predict(self, payload, headers=None, response_headers=None):
        if not self.settings.ready():
            # REST checks readiness before predict, gRPC does not: a model
            # still loading refuses work itself (503 / UNAVAILABLE).
            raise ModelNotReady(self.name)
        if self.settings.slow_seconds > 0:
            await asyncio.sleep(self.settings.slow_seconds)
        if not isinstance(payload, InferRequest):
            raise InvalidInput("this model speaks the v2 protocol only")
        tensors = {
            t.name: (t.datatype, t.shape, t.as_numpy) for t in payload.inputs
        }
        try:
            result = forecaster_core.forecast(self.settings, tensors)
        except forecaster_core.ContractError as exc:
            raise InvalidInput(str(exc)) from exc
        out = InferOutput(name="forecast", shape=list(result.shape), datatype="FP32")
        out.set_data_from_numpy(result, binary_data=payload.use_binary_outputs)
        return InferResponse(
            response_id=payload.id,
            model_name=self.name,
            infer_outputs=[out],
            use_binary_outputs=payload.use_binary_outputs,
            requested_outputs=payload.request_outputs,
        )


def bind_to(host):
    """Make kserve's REST (uvicorn) and gRPC (grpc.aio) servers listen on
    host only: kserve hard-codes the wildcard addresses."""
    import grpc.aio._server as aio_server
    import uvicorn

    config_init = uvicorn.Config.__init__

    def init(self, *args, **kwargs):
        kwargs["host"] = host
        config_init(self, *args, **kwargs)

    uvicorn.Config.__init__ = init

    add_port = aio_server.Server.add_insecure_port

    def add_insecure_port(self, address):
        return add_port(self, f"{host}:{address.rsplit(':', 1)[1]}")

    aio_server.Server.add_insecure_port = add_insecure_port


def main():
    parser = argparse.ArgumentParser(parents=[kserve.model_server.parser])
    args, _ = parser.parse_known_args()
    bind_to(os.environ.get("FORECASTER_BIND_HOST", "127.0.0.1"))
    model = SeasonalNaive(args.model_name, forecaster_core.Settings())
    kserve.ModelServer().start([model])


if __name__ == "__main__":
    main()
