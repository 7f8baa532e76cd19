"""Pen strokes traced from MNIST images, for drawing them on the demo's canvas with the mouse.

An image is upsampled (bilinear, ×2), thresholded and thinned to a one-pixel skeleton
(Zhang–Suen); the skeleton's pixel graph is then walked into polylines that cover every edge,
preferring straight continuations, so a pen of MNIST-like width retraces the digit.
numpy only (no scikit-image in the test extras).

>>> import numpy as np
>>> img = np.zeros((28, 28), np.uint8); img[5:23, 13:15] = 255      # a vertical bar: a "1"
>>> strokes = trace_strokes(img)
>>> len(strokes), abs(strokes[0][0][0] - 140) < 15
(1, True)
"""

from __future__ import annotations

import numpy as np

Point = tuple[float, float]


def upsample(img: np.ndarray, factor: int) -> np.ndarray:
    """Bilinear upsampling by an integer factor (pixel centres aligned, edges clamped)."""
    h, w = img.shape
    ys = (np.arange(h * factor) + 0.5) / factor - 0.5
    xs = (np.arange(w * factor) + 0.5) / factor - 0.5
    y0 = np.clip(np.floor(ys).astype(int), 0, h - 1)
    x0 = np.clip(np.floor(xs).astype(int), 0, w - 1)
    y1, x1 = np.minimum(y0 + 1, h - 1), np.minimum(x0 + 1, w - 1)
    fy = np.clip(ys - y0, 0, 1)[:, None]
    fx = np.clip(xs - x0, 0, 1)[None, :]
    a = img.astype(np.float64)
    top = a[y0][:, x0] * (1 - fx) + a[y0][:, x1] * fx
    bottom = a[y1][:, x0] * (1 - fx) + a[y1][:, x1] * fx
    return top * (1 - fy) + bottom * fy


def thin(mask: np.ndarray) -> np.ndarray:
    """Zhang–Suen thinning of a boolean image to a one-pixel-wide skeleton."""
    b = np.pad(mask.astype(np.uint8), 1)
    while True:
        changed = False
        for step in (0, 1):
            # neighbours P2..P9, clockwise from north
            n = [b[:-2, 1:-1], b[:-2, 2:], b[1:-1, 2:], b[2:, 2:],
                 b[2:, 1:-1], b[2:, :-2], b[1:-1, :-2], b[:-2, :-2]]
            count = sum(n)
            transitions = sum((n[i] == 0) & (n[(i + 1) % 8] == 1) for i in range(8))
            p2, p4, p6, p8 = n[0], n[2], n[4], n[6]
            if step == 0:
                cond = (p2 * p4 * p6 == 0) & (p4 * p6 * p8 == 0)
            else:
                cond = (p2 * p4 * p8 == 0) & (p2 * p6 * p8 == 0)
            remove = (b[1:-1, 1:-1] == 1) & (count >= 2) & (count <= 6) & (transitions == 1) \
                & cond
            if remove.any():
                b[1:-1, 1:-1][remove] = 0
                changed = True
        if not changed:
            return b[1:-1, 1:-1].astype(bool)


def _edges(skeleton: np.ndarray) -> dict[tuple[int, int], set[tuple[int, int]]]:
    """Pixel adjacency: 4-neighbours, plus diagonals not already joined through a 4-neighbour."""
    pixels = {(int(y), int(x)) for y, x in zip(*np.nonzero(skeleton))}
    graph: dict[tuple[int, int], set[tuple[int, int]]] = {p: set() for p in pixels}
    for y, x in pixels:
        for dy, dx in ((0, 1), (1, 0), (1, 1), (1, -1)):
            q = (y + dy, x + dx)
            if q not in pixels:
                continue
            if dy and dx and ((y + dy, x) in pixels or (y, x + dx) in pixels):
                continue
            graph[(y, x)].add(q)
            graph[q].add((y, x))
    return graph


def _walk(graph) -> list[list[tuple[int, int]]]:
    """Polylines covering every edge once: start at loose ends, keep going straight."""
    unused = {p: set(q) for p, q in graph.items()}
    paths = [[p] for p, q in graph.items() if not q]  # isolated dots
    while any(unused.values()):
        live = [p for p, q in unused.items() if q]
        odd = [p for p in live if len(unused[p]) % 2 == 1]
        start = min(odd or live)
        path, direction = [start], None
        while unused[path[-1]]:
            cur = path[-1]

            def turn(q, cur=cur, direction=direction):
                step = (q[0] - cur[0], q[1] - cur[1])
                return 0 if direction is None else -(step[0] * direction[0] + step[1] * direction[1])

            nxt = min(sorted(unused[cur]), key=turn)
            unused[cur].discard(nxt)
            unused[nxt].discard(cur)
            direction = (nxt[0] - cur[0], nxt[1] - cur[1])
            path.append(nxt)
        paths.append(path)
    return paths


def _smooth(path: list[Point]) -> list[Point]:
    if len(path) < 3:
        return path
    a = np.array(path, dtype=np.float64)
    mid = (a[:-2] + 2 * a[1:-1] + a[2:]) / 4
    return [path[0], *map(tuple, mid.tolist()), path[-1]]


def trace_strokes(img: np.ndarray, canvas: int = 280, factor: int = 2,
                  threshold: float = 96.0) -> list[list[Point]]:
    """Strokes (lists of canvas ``(x, y)`` points) that redraw a 28×28 MNIST ``img`` on a
    ``canvas``-pixel square; longest strokes first."""
    img = np.asarray(img, dtype=np.uint8).reshape(28, 28)
    skeleton = thin(upsample(img, factor) >= threshold)
    scale = canvas / (28 * factor)
    strokes = []
    for path in _walk(_edges(skeleton)):
        points = [((x + 0.5) * scale, (y + 0.5) * scale) for y, x in path]
        strokes.append(_smooth(points))
    return sorted(strokes, key=len, reverse=True)
