"""Optimizers and learning-rate schedulers, with PyTorch's names and update rules.

>>> import ember
>>> from ember import nn, optim
>>> model = nn.Linear(2, 1, backend="autodiff-numpy")
>>> opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
>>> sched = optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.5)
>>> x = ember.tensor([[1.0, 2.0]], backend="autodiff-numpy")
>>> grads = (model(x) ** 2).sum().backward()
>>> opt.step(grads)
>>> sched.step()
>>> sched.get_last_lr()
[0.1]
"""

from . import lr_scheduler
from .adam import Adam, AdamW
from .lr_scheduler import (
    ChainedScheduler,
    ConstantLR,
    CosineAnnealingLR,
    CosineAnnealingWarmRestarts,
    ExponentialLR,
    LambdaLR,
    LinearLR,
    LRScheduler,
    MultiStepLR,
    NoamLR,
    SequentialLR,
    StepLR,
    warmup_cosine,
)
from .optimizer import Optimizer, clip_grad_norm, clip_grad_value
from .others import AdaGrad, Lion, RMSProp
from .sgd import SGD

Adagrad = AdaGrad  # torch.optim spelling
RMSprop = RMSProp

__all__ = [
    "SGD",
    "AdaGrad",
    "Adagrad",
    "Adam",
    "AdamW",
    "ChainedScheduler",
    "ConstantLR",
    "CosineAnnealingLR",
    "CosineAnnealingWarmRestarts",
    "ExponentialLR",
    "LRScheduler",
    "LambdaLR",
    "LinearLR",
    "Lion",
    "MultiStepLR",
    "NoamLR",
    "Optimizer",
    "RMSProp",
    "RMSprop",
    "SequentialLR",
    "StepLR",
    "clip_grad_norm",
    "clip_grad_value",
    "lr_scheduler",
    "warmup_cosine",
]
