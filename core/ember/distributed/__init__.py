"""Scale out on Ray: data-parallel training (Ray Train) and batch inference (Ray Data).

``EmberTrainer`` trains one Ember model on N workers (its shard of a Ray Dataset each,
Autodiff gradients averaged by torch.distributed's gloo all-reduce, Ember records as Ray Train
checkpoints); ``Predictor`` is a ``Dataset.map_batches`` class that loads a model once per
actor. Both run in this process without Ray (one worker); asking for more names the extra:
``pip install 'ember[ray]'``. See docs/distributed.md.
"""

from .data import MapColumn, iter_batches, to_ray_dataset
from .extras import INSTALL, ray_available
from .loop import TrainSpec, train_loop
from .predictor import Predictor, predict
from .trainer import EmberTrainer, TrainResult, load_model

__all__ = [
    "EmberTrainer", "TrainResult", "load_model", "TrainSpec", "train_loop", "Predictor", "predict",
    "MapColumn", "iter_batches", "to_ray_dataset", "INSTALL", "ray_available",
]
