"""The semantic-search page (demos/embed/web) in headless Chromium.

The page runs all-MiniLM-L6-v2 by ember in Pyodide on the wasm kernels (its default) with the
model folder ``serve_embed`` writes; its similarities must match ember on CPython's numpy
backend, whose embeddings tests/demos/test_embed.py checks against a PyTorch BERT built from the
same safetensors. Screenshot: ``$EMBER_ARTIFACTS/embed.png`` (default runs/web-artifacts/).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import quote
from urllib.request import urlopen

import numpy as np
import pytest

from .harness import ROOT, blank_page

ARTIFACTS = Path(os.environ.get("EMBER_ARTIFACTS", ROOT / "runs" / "web-artifacts"))
QUERY = "Someone is having a meal."


@pytest.fixture(scope="module")
def embed_server(server, tmp_path_factory):
    from ember.demos.embed_web import serve_embed
    from ember.errors import DatasetError

    try:
        srv = serve_embed(port=0, block=False, model_dir=tmp_path_factory.mktemp("embed_model"))
    except (DatasetError, ImportError) as e:
        pytest.skip(f"all-MiniLM-L6-v2 unavailable: {e}")
    yield srv
    srv.close()


def _reference(query: str, sentences: list[str]) -> np.ndarray:
    from ember.demos.embed import embed

    v = embed([query, *sentences]).numpy()
    return v[1:] @ v[0]


def _wait(page, query: str) -> dict:
    page.wait_for_function(
        "([q]) => window.embedDemo.error || (window.embedDemo.last && "
        "window.embedDemo.last.query === q && !window.embedDemo.busy)",
        arg=[query], timeout=240_000)
    assert page.evaluate("window.embedDemo.error") is None, page.console_lines[-20:]
    return page.evaluate("window.embedDemo.last")


def _check(page, query: str, result: dict) -> None:
    sentences = [s.strip() for s in page.input_value("#sentences").splitlines() if s.strip()]
    want = _reference(query, sentences)
    order = [i for _, _, i in result["ranked"]]
    scores = [s for _, s, _ in result["ranked"]]
    assert sorted(order) == list(range(len(sentences)))
    np.testing.assert_allclose(scores, want[order], atol=1e-4)
    assert order[0] == int(np.argmax(want))
    shown = page.locator("#ranked > span").all_text_contents()
    assert shown[0::2] == [sentences[i] for i in order]
    assert shown[1] == f"{scores[0]:.3f}"
    assert page.text_content("#latency").split()[1] == "ms"


def test_serve_embed_serves_the_page_the_runtime_and_the_model(embed_server):
    with urlopen(embed_server.page_url) as r:
        assert b'id="query"' in r.read()
    with urlopen(embed_server.url + "ember.js") as r:
        assert b"export async function loadEmber" in r.read()
    with urlopen(embed_server.page_url + "model/model.json") as r:
        config = json.loads(r.read())
    with urlopen(embed_server.page_url + "model/" + config["vocab"]) as r:
        vocab = r.read().decode().splitlines()
    assert config["dtype"] == "float32" and len(vocab) == 30522 and vocab[7592] == "hello"


def test_page_ranks_sentences_on_the_wasm_kernels(browser, server, embed_server):
    page = blank_page(browser, server)
    page.set_default_timeout(240_000)
    page.goto(embed_server.page_url + "?q=" + quote(QUERY))
    try:
        page.wait_for_function("window.embedDemo && (window.embedDemo.ready || "
                               "window.embedDemo.error)", timeout=240_000)
        assert page.evaluate("window.embedDemo.backend") == "wasm", page.console_lines[-20:]
        assert page.text_content("#backend") == "CPU (wasm kernels)"
        first = _wait(page, QUERY)
        _check(page, QUERY, first)
        assert first["ranked"][0][0].startswith("A man is eating")
        assert first["embedded"] == 9 and first["tokens"][-2:] == ["meal", "."]
        # a typed query: only the query is embedded now (the sentences are cached)
        page.fill("#query", "A person plays a musical instrument.")
        page.press("#query", "Enter")
        second = _wait(page, "A person plays a musical instrument.")
        _check(page, "A person plays a musical instrument.", second)
        assert second["embedded"] == 0
        assert second["ranked"][0][0] == "A woman is playing the violin."
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "embed.png"))
        # an empty query is a message, not a run
        page.fill("#query", "")
        page.press("#query", "Enter")
        assert page.text_content("#message") == "Type a query."
        assert page.evaluate("window.embedDemo.runs") == 2
    finally:
        page.close()


def test_page_on_the_pure_python_backend(browser_without_webgpu, server, embed_server):
    """``?backend=python`` (no wasm kernels): slow, so two short sentences and one query."""
    page = blank_page(browser_without_webgpu, server)
    page.set_default_timeout(240_000)
    page.goto(embed_server.page_url + "?backend=python")
    try:
        page.wait_for_function("window.embedDemo && (window.embedDemo.ready || "
                               "window.embedDemo.error)", timeout=240_000)
        assert page.evaluate("window.embedDemo.backend") == "python", page.console_lines[-20:]
        assert page.text_content("#backend") == "CPU (Python backend)"
        page.click("summary")  # the sentence list is folded away by default
        page.fill("#sentences", "A cat sleeps.\nStocks fell today.")
        page.fill("#query", "A kitten naps.")
        page.press("#query", "Enter")
        result = _wait(page, "A kitten naps.")
        _check(page, "A kitten naps.", result)
        assert result["ranked"][0][0] == "A cat sleeps."
    finally:
        page.close()
