"""Detection post-processing: NonMaxSuppression.

Greedy suppression is sequential and data-dependent, so it runs in Python over the (small)
box and score lists, on every backend alike.
"""

from __future__ import annotations

import ember

from . import op
from ._util import scalar


def _corners(box, center: bool) -> tuple[float, float, float, float]:
    """(y1, x1, y2, x2) with y1 <= y2 and x1 <= x2."""
    if center:
        xc, yc, w, h = box
        return yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2
    y1, x1, y2, x2 = box
    return min(y1, y2), min(x1, x2), max(y1, y2), max(x1, x2)


def _iou(a, b) -> float:
    h = min(a[2], b[2]) - max(a[0], b[0])
    w = min(a[3], b[3]) - max(a[1], b[1])
    inter = max(h, 0.0) * max(w, 0.0)
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


@op("NonMaxSuppression")
def non_max_suppression(ctx, boxes, scores, max_output_boxes_per_class=None,
                        iou_threshold=None, score_threshold=None, center_point_box=0):
    most = int(scalar(max_output_boxes_per_class, 0))
    iou_max = float(scalar(iou_threshold, 0.0))
    floor = scalar(score_threshold, None)
    all_boxes, all_scores = boxes.tolist(), scores.tolist()
    selected = []
    for b, (bxs, per_class) in enumerate(zip(all_boxes, all_scores)):
        corners = [_corners(x, bool(center_point_box)) for x in bxs]
        for c, sc in enumerate(per_class):
            order = sorted((i for i, s in enumerate(sc) if floor is None or s > floor),
                           key=lambda i: -sc[i])
            kept: list[int] = []
            for i in order:
                if len(kept) >= most:
                    break
                if all(_iou(corners[i], corners[j]) <= iou_max for j in kept):
                    kept.append(i)
            selected += [[b, c, i] for i in kept]
    if not selected:
        return ember.zeros(0, 3, dtype=ember.int64, backend=ctx.backend)
    return ember.tensor(selected, dtype=ember.int64, backend=ctx.backend)
