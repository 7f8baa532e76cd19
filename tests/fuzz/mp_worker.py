# The MicroPython fuzz worker: `micropython tests/fuzz/mp_worker.py` with ember_micro on
# MICROPYPATH (see tests/fuzz/harness.py). MicroPython code: no f-strings with `=`, no typing.
#
# Reads one model path per line on stdin; loads it with ember_micro and runs one inference on a
# zero input, with the default kernels (native when built) and weights in RAM, then with the
# pure-Python kernels streaming weights from the file in small chunks; prints one JSON line per
# input, like tests/fuzz/worker.py. One process serves many inputs (a fresh one costs more
# than the load itself).
import gc
import io
import json
import sys

from ember_micro.model import Model, ModelError


def _where(e):
    buf = io.StringIO()
    sys.print_exception(e, buf)
    lines = [ln.strip() for ln in buf.getvalue().split("\n") if ln.strip().startswith("File")]
    return lines[-1] if lines else ""


def _predict(path, tier, resident, chunk):
    m = Model(path, tier=tier, resident=resident, chunk=chunk)
    try:
        m.predict(bytes(m.in_size))
    finally:
        m.close()


def _run(path):
    try:
        _predict(path, None, 16384, 8192)
        _predict(path, "pure", 0, 64)
        return {"status": "ok"}
    except ModelError as e:
        return {"status": "typed", "error": "ModelError", "message": str(e)[:300]}
    except MemoryError as e:
        return {"status": "memory", "error": "MemoryError", "message": str(e)[:300],
                "where": _where(e)}
    except Exception as e:  # noqa: BLE001 - every other exception is the finding
        return {"status": "untyped", "error": type(e).__name__, "message": str(e)[:300],
                "where": _where(e)}


def main():
    print("ready")
    while True:
        line = sys.stdin.readline()
        if not line:
            break
        result = _run(line.strip())
        gc.collect()
        print(json.dumps(result))


main()
