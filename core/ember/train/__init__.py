"""Training: the Learner loop, metrics, checkpoints, run logs and progress renderers."""

from .checkpoint import load_checkpoint, save_checkpoint
from .learner import FitResult, Learner
from .metrics import (
    F1, Accuracy, ConfusionMatrix, CpuUsage, ItemsPerSecond, LearningRate, Loss, MemoryUsage,
    Metric, Precision, Recall, StepOutput, TopKAccuracy, classification_metrics,
)
from .renderers import DashboardRenderer, PlainRenderer, Renderer, default_renderer
from .runlog import RunLog, plot_curves

__all__ = [
    "load_checkpoint", "save_checkpoint", "FitResult", "Learner", "F1", "Accuracy",
    "ConfusionMatrix", "CpuUsage", "ItemsPerSecond", "LearningRate", "Loss", "MemoryUsage",
    "Metric", "Precision", "Recall", "StepOutput", "TopKAccuracy", "classification_metrics",
    "DashboardRenderer", "PlainRenderer", "Renderer", "default_renderer", "RunLog",
    "plot_curves",
]
