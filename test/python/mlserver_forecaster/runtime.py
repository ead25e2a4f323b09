"""An MLServer (1.7) custom runtime serving the seasonal-naive forecaster of
forecaster_core.py under carbongate's forecaster tensor contract.

Start it from this directory (settings.json and model-settings.json are here):

    MLSERVER_HTTP_PORT=P MLSERVER_GRPC_PORT=G MLSERVER_METRICS_PORT=M \
    MLSERVER_MODEL_NAME=NAME mlserver start .

MLSERVER_* variables override settings.json, MLSERVER_MODEL_* override
model-settings.json (pydantic-settings). FORECASTER_* fault knobs are
described in forecaster_core.py; FORECASTER_NOT_READY_SECONDS makes load()
take that long, which is how a model is "not ready" in MLServer.
"""

import asyncio
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from mlserver import MLModel  # noqa: E402
from mlserver.codecs import NumpyCodec  # noqa: E402
from mlserver.errors import InferenceError  # noqa: E402
from mlserver.types import InferenceRequest, InferenceResponse  # noqa: E402

import forecaster_core  # noqa: E402


class SeasonalNaive(MLModel):
    async def load(self) -> bool:
        self.settings_ = forecaster_core.Settings()
        if self.settings_.not_ready_seconds > 0:
            await asyncio.sleep(self.settings_.not_ready_seconds)
        return True

    async def predict(self, payload: InferenceRequest) -> InferenceResponse:
        s = self.settings_
        if s.slow_seconds > 0:
            await asyncio.sleep(s.slow_seconds)

        def decoder(inp):
            return lambda: NumpyCodec.decode_input(inp)

        tensors = {
            inp.name: (inp.datatype.value if hasattr(inp.datatype, "value") else str(inp.datatype),
                       inp.shape, decoder(inp))
            for inp in payload.inputs
        }
        try:
            result = forecaster_core.forecast(s, tensors)
        except forecaster_core.ContractError as exc:
            raise InferenceError(str(exc)) from exc
        return InferenceResponse(
            id=payload.id,
            model_name=self.name,
            model_version=self.version,
            outputs=[NumpyCodec.encode_output("forecast", result)],
        )
