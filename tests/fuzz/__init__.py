"""Fuzzing Ember's readers: safetensors, records, PyTorch checkpoints (zip and legacy), ONNX
(load and convert), MCU model files (CPython decoder and MicroPython runtime) and images.

* ``python -m tests.fuzz.run --format pt_zip --seconds 60`` (``make fuzz`` runs every format
  for ``FUZZ_SECONDS``); bug inputs are saved under ``runs/fuzz/<format>/``.
* ``pytest tests/fuzz``: every file in ``regressions/<format>/`` replays through its reader,
  and a short seeded run of each format must find no bug.

Modules: ``seeds`` (valid files from the real writers), ``mutate`` (the engine), ``formats``,
``pt``, ``onnx_mut`` (structure-aware edits and checksum fixups), ``targets`` (format →
reader, typed errors, mutations), ``worker`` / ``mp_worker.py`` (the processes that run
inputs), ``harness`` (limits, classification, campaigns), ``run`` (the command line).
"""
