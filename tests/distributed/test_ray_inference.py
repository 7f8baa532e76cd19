"""Batch inference on Ray Data: 2 actors give exactly the single-process predictions, in order."""

from __future__ import annotations

import numpy as np
import pytest
from ray_helpers import seeded_cnn

import ember
from ember.demos.mnist_model import preprocess
from ember.distributed import Predictor, predict


def test_two_actors_give_the_single_process_predictions_in_order(ray_cluster, mnist_test):
    # the same batches both ways: a matmul's rounding depends on the batch's shape
    options = dict(inputs="image", transform=preprocess, batch_size=50)
    expected = predict(mnist_test, seeded_cnn, **options)  # in this process
    dataset = predict(mnist_test, seeded_cnn, num_actors=2, **options)
    rows = dataset.take_all()
    assert [r["label"] for r in rows] == mnist_test["label"].tolist()  # the input order
    # equal to float32 rounding, not bit for bit: Ray's actors run BLAS on one thread
    # (OMP_NUM_THREADS=1), this process on every core, and OpenBLAS's sums follow its threads
    np.testing.assert_allclose(np.stack([r["output"] for r in rows]), expected["output"],
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal([r["prediction"] for r in rows], expected["prediction"])


def test_the_single_process_predictions_match_the_model_called_directly(mnist_test):
    columns = {k: v[:40] for k, v in mnist_test.items()}
    got = predict(columns, seeded_cnn, batch_size=16, inputs="image", transform=preprocess)
    with ember.no_grad():
        direct = seeded_cnn()(preprocess(ember.tensor(columns["image"]))).numpy()
    np.testing.assert_allclose(got["output"], direct, rtol=1e-6, atol=1e-6)
    assert got["prediction"].tolist() == direct.argmax(axis=1).tolist()


def test_a_missing_column_is_named():
    with pytest.raises(KeyError, match="no column 'pixels'.*'image'"):
        Predictor(seeded_cnn, inputs="pixels")({"image": np.zeros((1, 784), np.uint8)})


def test_efficientnet_over_a_photo_folder_on_two_actors(ray_cluster, tmp_path):
    """The inference demo's photo mode: decoded by Ray tasks, classified by 2 actors, the
    same top-1 as ``ember demo classify`` in this process, in the folder's order."""
    pytest.importorskip("sklearn")
    from PIL import Image
    from ray_helpers import load_demo
    from sklearn.datasets import load_sample_images

    from ember.demos.classify import classify

    for i, photo in enumerate(load_sample_images().images):
        Image.fromarray(photo).save(tmp_path / f"{i}.jpg")
        Image.fromarray(photo[:, ::-1]).save(tmp_path / f"{i}-mirrored.jpg")
    summary = load_demo("predict").main(["--images", str(tmp_path), "--actors", "2",
                                         "--batch-size", "2"])
    assert summary["in_order"] and summary["images"] == 4
    expected = [top[0][0] for top in classify(summary["paths"], top=1)]
    assert summary["top1"] == expected
