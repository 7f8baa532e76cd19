// The MNIST drawing pad shared by the drawing page (../mnist.js) and the training page
// (train/): mouse/touch strokes on a canvas, and MNIST's preprocessing of the drawing.

// ---------------------------------------------------------------- MNIST-style preprocessing
// The digit's bounding box is scaled (anti-aliased, aspect kept) to fit 20×20, then placed in
// 28×28 with its centre of mass at the centre, as in the MNIST paper.
export function toMnist(source) {
  const { width, height } = source;
  const img = source.getContext("2d").getImageData(0, 0, width, height).data;
  let x0 = width, y0 = height, x1 = -1, y1 = -1;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      if (img[4 * (y * width + x)] > 20) {
        x0 = Math.min(x0, x); x1 = Math.max(x1, x); y0 = Math.min(y0, y); y1 = Math.max(y1, y);
      }
    }
  }
  if (x1 < 0) return null;
  const bw = x1 - x0 + 1, bh = y1 - y0 + 1;
  const scale = 20 / Math.max(bw, bh);
  const w = Math.max(1, Math.round(bw * scale)), h = Math.max(1, Math.round(bh * scale));
  const small = new OffscreenCanvas(w, h);
  const sctx = small.getContext("2d", { willReadFrequently: true });
  sctx.imageSmoothingEnabled = true;
  sctx.imageSmoothingQuality = "high";
  sctx.drawImage(source, x0, y0, bw, bh, 0, 0, w, h);
  const px = sctx.getImageData(0, 0, w, h).data;
  let mass = 0, cx = 0, cy = 0;
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const v = px[4 * (y * w + x)];
      mass += v; cx += v * x; cy += v * y;
    }
  }
  cx = mass ? cx / mass : (w - 1) / 2;
  cy = mass ? cy / mass : (h - 1) / 2;
  const dx = Math.round(13.5 - cx), dy = Math.round(13.5 - cy);
  const out = new Uint8Array(784);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const tx = x + dx, ty = y + dy;
      if (tx >= 0 && tx < 28 && ty >= 0 && ty < 28) out[ty * 28 + tx] = px[4 * (y * w + x)];
    }
  }
  return out;
}

// ---------------------------------------------------------------- drawing (mouse + touch)
// White strokes, 20 px wide, on `pad`; onInk() after each move and at the end of a stroke.
export function drawingPad(pad, onInk) {
  const ctx = pad.getContext("2d", { willReadFrequently: true });
  let drawing = false, lastPoint = null;
  const point = (e) => {
    const r = pad.getBoundingClientRect();
    return [(e.clientX - r.left) * (pad.width / r.width), (e.clientY - r.top) * (pad.height / r.height)];
  };
  function stroke(to) {
    ctx.strokeStyle = "#fff";
    ctx.fillStyle = "#fff";
    ctx.lineWidth = 20;
    ctx.lineCap = ctx.lineJoin = "round";
    ctx.beginPath();
    const from = lastPoint ?? to;
    ctx.moveTo(from[0], from[1]);
    ctx.lineTo(to[0], to[1]);
    ctx.stroke();
    lastPoint = to;
  }
  pad.addEventListener("pointerdown", (e) => {
    drawing = true; lastPoint = null; pad.setPointerCapture(e.pointerId); stroke(point(e));
  });
  pad.addEventListener("pointermove", (e) => { if (drawing) { stroke(point(e)); onInk(); } });
  for (const type of ["pointerup", "pointercancel"]) {
    pad.addEventListener(type, () => { if (drawing) { drawing = false; onInk(); } });
  }
}
