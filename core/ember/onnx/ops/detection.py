"""Detection ops: NonMaxSuppression and RoiAlign.

Greedy suppression is sequential and data-dependent, so it runs in Python over the (small)
box and score lists, on every backend alike. RoiAlign works out each region's bilinear sample
positions and weights in Python, then gathers and weighs them with tensor ops.
"""

from __future__ import annotations

import math

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


def _bilinear_taps(pos: float, size: int):
    """(low, high, weight of low, weight of high) of a sample at ``pos``, or None outside."""
    if pos < -1.0 or pos > size:
        return None
    pos = max(pos, 0.0)
    low = int(pos)
    if low >= size - 1:
        return size - 1, size - 1, 1.0, 0.0
    frac = pos - low
    return low, low + 1, 1.0 - frac, frac


def _roi_samples(roi, h: int, w: int, out_h: int, out_w: int, ratio: int, half_pixel: bool):
    """Per sample (bins x grid, row-major) the 4 flat positions and weights, and the count of
    samples per bin."""
    off = 0.5 if half_pixel else 0.0
    x1, y1, x2, y2 = (v - off for v in roi)
    rw, rh = x2 - x1, y2 - y1
    if not half_pixel:
        rw, rh = max(rw, 1.0), max(rh, 1.0)
    bh, bw = rh / out_h, rw / out_w
    gh = ratio if ratio > 0 else math.ceil(rh / out_h)
    gw = ratio if ratio > 0 else math.ceil(rw / out_w)
    pos, wts = [[] for _ in range(4)], [[] for _ in range(4)]
    for ph in range(out_h):
        for pw in range(out_w):
            for iy in range(gh):
                ty = _bilinear_taps(y1 + ph * bh + (iy + 0.5) * bh / gh, h)
                for ix in range(gw):
                    tx = _bilinear_taps(x1 + pw * bw + (ix + 0.5) * bw / gw, w)
                    if ty is None or tx is None:
                        taps = [(0, 0.0)] * 4
                    else:
                        (yl, yh, wyl, wyh), (xl, xh, wxl, wxh) = ty, tx
                        taps = [(yl * w + xl, wyl * wxl), (yl * w + xh, wyl * wxh),
                                (yh * w + xl, wyh * wxl), (yh * w + xh, wyh * wxh)]
                    for k, (p, wt) in enumerate(taps):
                        pos[k].append(p)
                        wts[k].append(wt)
    return pos, wts, max(gh * gw, 1)


@op("RoiAlign")
def roi_align(ctx, x, rois, batch_indices, coordinate_transformation_mode="half_pixel",
              mode="avg", output_height=1, output_width=1, sampling_ratio=0,
              spatial_scale=1.0):
    if ctx.opset < 16:  # opset 10 has no such attribute and behaves so
        coordinate_transformation_mode = "output_half_pixel"
    n, c, h, w = x.shape
    flat = x.reshape(n, c, h * w)
    out = []
    for roi, b in zip(rois.tolist(), batch_indices.tolist()):
        pos, wts, count = _roi_samples([v * spatial_scale for v in roi], h, w, output_height,
                                       output_width, sampling_ratio,
                                       coordinate_transformation_mode == "half_pixel")
        img = flat[int(b)]
        terms = [ember.index_select(img, 1, ember.tensor(p, dtype=ember.int64,
                                                         backend=x.backend))
                 * ember.tensor(wt, dtype=x.dtype, backend=x.backend)
                 for p, wt in zip(pos, wts)]
        samples = (terms[0] + terms[1] + terms[2] + terms[3] if mode == "avg" else
                   ember.maximum(ember.maximum(terms[0], terms[1]),
                                 ember.maximum(terms[2], terms[3])))
        samples = samples.reshape(c, output_height, output_width, count)
        out.append(ember.sum(samples, dim=-1) / count if mode == "avg"
                   else ember.amax(samples, dim=-1))
    if not out:
        return ember.zeros(0, c, output_height, output_width, dtype=x.dtype, backend=x.backend)
    return ember.stack(out, dim=0)
