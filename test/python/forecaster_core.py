"""The forecaster tensor contract and the seasonal-naive model shared by the
Python test peers (KServe Python model server and MLServer).

Contract (docs/ARCHITECTURE.md, "OIP tensor contract"):
  input  history    FP32  [B, L]  hourly intensity, oldest first
  input  start_unix INT64 [B, 1]  Unix seconds of the first forecast hour
  output forecast   FP32  [B, H]

The model is seasonal-naive with a 24 h season: forecast[b, h] =
history[b, L - 24 + h % 24], i.e. the last day of history repeated.

Fault knobs, read from the environment at start (all optional):
  FORECASTER_LOOKBACK          L (default 168)
  FORECASTER_HORIZON           H (default 96)
  FORECASTER_NOT_READY_SECONDS the model reports "not ready" (and refuses
                               inference) for this many seconds after start
  FORECASTER_SLOW_SECONDS      sleep this long in every inference
"""

import os
import time

import numpy as np

SEASON = 24


class ContractError(ValueError):
    """A request that does not fit the contract (the caller's fault)."""


class Settings:
    def __init__(self, environ=None):
        env = os.environ if environ is None else environ
        self.lookback = int(env.get("FORECASTER_LOOKBACK", "168"))
        self.horizon = int(env.get("FORECASTER_HORIZON", "96"))
        self.not_ready_seconds = float(env.get("FORECASTER_NOT_READY_SECONDS", "0"))
        self.slow_seconds = float(env.get("FORECASTER_SLOW_SECONDS", "0"))
        if self.lookback < SEASON:
            raise ValueError(f"FORECASTER_LOOKBACK={self.lookback} < {SEASON}")
        self._ready_at = time.monotonic() + self.not_ready_seconds

    def ready(self):
        return time.monotonic() >= self._ready_at

    def input_metadata(self):
        return [
            {"name": "history", "datatype": "FP32", "shape": [-1, self.lookback]},
            {"name": "start_unix", "datatype": "INT64", "shape": [-1, 1]},
        ]

    def output_metadata(self):
        return [{"name": "forecast", "datatype": "FP32", "shape": [-1, self.horizon]}]


def forecast(settings, tensors):
    """tensors maps input name -> (datatype, shape, numpy array or a thunk
    returning one). Returns the FP32 [B, H] forecast or raises ContractError."""
    for name in ("history", "start_unix"):
        if name not in tensors:
            raise ContractError(f"missing input '{name}'")
    extra = sorted(set(tensors) - {"history", "start_unix"})
    if extra:
        raise ContractError(f"unexpected input(s) {extra}")

    h_type, h_shape, h_data = tensors["history"]
    s_type, s_shape, s_data = tensors["start_unix"]
    if h_type != "FP32":
        raise ContractError(f"input 'history' has datatype {h_type}, want FP32")
    if s_type != "INT64":
        raise ContractError(f"input 'start_unix' has datatype {s_type}, want INT64")
    h_shape, s_shape = list(h_shape), list(s_shape)
    if len(h_shape) != 2 or h_shape[1] != settings.lookback or h_shape[0] < 1:
        raise ContractError(
            f"input 'history' has shape {h_shape}, want [B, {settings.lookback}]"
        )
    batch = h_shape[0]
    if s_shape != [batch, 1]:
        raise ContractError(f"input 'start_unix' has shape {s_shape}, want [{batch}, 1]")

    try:
        history = np.asarray(h_data() if callable(h_data) else h_data, dtype=np.float32)
        start = np.asarray(s_data() if callable(s_data) else s_data, dtype=np.int64)
        history = history.reshape(batch, settings.lookback)
        start = start.reshape(batch, 1)
    except (ValueError, TypeError) as exc:
        raise ContractError(f"tensor data does not match its shape: {exc}") from exc
    if np.any(start % 3600 != 0):
        raise ContractError("input 'start_unix' must be hour-aligned")

    last_day = history[:, settings.lookback - SEASON :]
    reps = -(-settings.horizon // SEASON)
    return np.tile(last_day, (1, reps))[:, : settings.horizon].astype(np.float32)
