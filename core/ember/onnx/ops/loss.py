"""Losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss."""

from __future__ import annotations

import ember
from ember.nn import functional as F

from . import op


@op("NegativeLogLikelihoodLoss")
def nll_loss(ctx, x, target, weight=None, ignore_index=None, reduction="mean"):
    t = target.astype(ember.int64)
    keep = t != ignore_index if ignore_index is not None else None
    safe = ember.where(keep, t, ember.zeros_like(t)) if keep is not None else t
    picked = -ember.gather(x, 1, safe.unsqueeze(1)).squeeze(1)
    w = weight[safe] if weight is not None else ember.ones_like(picked)
    if keep is not None:
        w = ember.where(keep, w, ember.zeros_like(w))
    loss = picked * w
    if reduction == "none":
        return loss
    if reduction == "sum":
        return ember.sum(loss)
    return ember.sum(loss) / ember.sum(w)


@op("SoftmaxCrossEntropyLoss")
def softmax_cross_entropy(ctx, scores, labels, weights=None, ignore_index=None,
                          reduction="mean"):
    log_prob = F.log_softmax(scores, dim=1)
    loss = nll_loss(ctx, log_prob, labels, weights, ignore_index, reduction)
    return loss, log_prob
