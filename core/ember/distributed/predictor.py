"""Batch inference on Ray Data: a class for ``Dataset.map_batches`` that loads the model once
per actor, and :func:`predict`, which runs it on N actors — or in this process without Ray.

Batches are ``{column: numpy array}``; the predictor adds ``output`` (the model's outputs) and
``prediction`` (their argmax, for classifiers) as numpy arrays. Both ways go through DLPack:
on the numpy backend the model reads the batch's array itself and the output column is the
output tensor's own buffer (no copies); another backend copies once each way.

>>> import numpy as np, ember
>>> from ember import nn
>>> def model():
...     layer = nn.Linear(2, 2)
...     layer.load_state_dict({"weight": ember.tensor([[1.0, 0.0], [0.0, 1.0]]),
...                            "bias": ember.zeros(2)})
...     return layer
>>> out = predict({"x": np.array([[1.0, 3.0], [2.0, 0.0]], dtype="float32")}, model)
>>> out["prediction"].tolist()
[1, 0]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from .extras import INSTALL, ray_available, require


class Predictor:
    """``Predictor(model_fn, inputs="x", transform=None, backend="numpy")(batch)``: the batch
    with ``output`` and ``prediction`` columns added. ``model_fn()`` runs once, in
    ``__init__`` — on Ray Data, once per actor.

    >>> import numpy as np
    >>> from ember import nn
    >>> run = Predictor(lambda: nn.Linear(2, 3))
    >>> out = run({"x": np.ones((4, 2), dtype="float32")})
    >>> sorted(out), out["output"].shape, out["prediction"].shape
    (['output', 'prediction', 'x'], (4, 3), (4,))
    """

    def __init__(self, model_fn: Callable, inputs: str = "x", transform: Callable | None = None,
                 backend: str = "numpy"):
        from ..backends import get_backend

        self.backend = get_backend(backend)
        self.model = model_fn().to(self.backend).eval()
        self.inputs, self.transform = inputs, transform

    def __call__(self, batch: dict) -> dict:
        import numpy as np

        from ..array_api import from_dlpack
        from ..autodiff import no_grad

        if self.inputs not in batch:
            raise KeyError(f"Predictor: no column {self.inputs!r} in the batch; columns: "
                           f"{sorted(batch)}")
        x = from_dlpack(np.ascontiguousarray(batch[self.inputs]), device=self.backend)
        with no_grad():
            out = self.model(self.transform(x) if self.transform else x)
        result = dict(batch)
        result["output"] = np.from_dlpack(out)
        if out.ndim == 2:
            result["prediction"] = result["output"].argmax(axis=1)
        return result


def predict(data, model_fn: Callable, num_actors: int = 1, batch_size: int = 256,
            use_ray: bool | None = None, **predictor):
    """Run a :class:`Predictor` over ``data`` ({column: numpy array} or a Ray Dataset).

    One actor and in-memory columns: in this process, returns ``{column: array}``. Otherwise
    Ray Data's ``map_batches`` over ``num_actors`` actors (one CPU each), rows kept in order;
    returns the Ray Dataset (``.take_all()``, ``.to_numpy_refs()``, ``.write_parquet()``…).

    >>> import numpy as np
    >>> from ember import nn
    >>> columns = {"x": np.ones((5, 2), dtype="float32")}
    >>> out = predict(columns, lambda: nn.Linear(2, 3), batch_size=2)
    >>> out["output"].shape  # in this process: one actor, in-memory columns
    (5, 3)
    """
    use_ray = (num_actors > 1 or not isinstance(data, Mapping)) if use_ray is None else use_ray
    if not use_ray:
        from .data import iter_batches

        run = Predictor(model_fn, **predictor)
        parts = [run(batch) for batch in iter_batches(data, batch_size)]
        import numpy as np

        return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]} if parts else {}
    if not ray_available():
        raise ImportError(f"predict(num_actors={num_actors}) runs on Ray Data, which is not "
                          f"installed: {INSTALL} (one actor runs in this process without it)")
    ray_data = require("ray.data", "ember.distributed.predict")
    dataset = data
    if isinstance(data, Mapping):
        from .data import to_ray_dataset

        dataset = to_ray_dataset(data, block_rows=batch_size)
    out = dataset.map_batches(
        Predictor, fn_constructor_kwargs={"model_fn": model_fn, **predictor},
        compute=ray_data.ActorPoolStrategy(size=num_actors), num_cpus=1,
        batch_size=batch_size, batch_format="numpy",
    )
    out.context.execution_options.preserve_order = True
    return out
