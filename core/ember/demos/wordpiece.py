"""BERT's WordPiece tokenizer in pure Python (no numpy, runs in Pyodide): the uncased
``BertTokenizer`` that all-MiniLM-L6-v2 ships (``vocab.txt``).

Two stages, as in the original BERT code:

1. *basic*: drop control characters, turn whitespace into spaces, put spaces around CJK
   ideographs, lowercase and strip accents (NFD, no combining marks), split on whitespace and
   around every punctuation character;
2. *WordPiece*: each word becomes the longest vocabulary prefix, then the longest ``##``
   continuation, and so on; a word with no full match (or longer than 100 characters) is one
   ``[UNK]``.

>>> tok = WordPiece(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "un", "##aff", "##able", "!", "cafe"])
>>> tok.tokenize("Unaffable Café!")
['un', '##aff', '##able', 'cafe', '!']
>>> tok.encode("unaffable")
[2, 4, 5, 6, 3]
"""

from __future__ import annotations

import os
import unicodedata

MAX_WORD_CHARS = 100  # longer words are [UNK] (BERT's max_input_chars_per_word)


def _is_control(ch: str) -> bool:
    if ch in "\t\n\r":
        return False
    return unicodedata.category(ch) in ("Cc", "Cf")


def _is_whitespace(ch: str) -> bool:
    return ch in " \t\n\r" or unicodedata.category(ch) == "Zs"


def _is_punctuation(ch: str) -> bool:
    # BERT counts every non-alphanumeric ASCII character as punctuation ("$", "^", "`"…)
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def _is_cjk(cp: int) -> bool:
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF
            or 0x2A700 <= cp <= 0x2B73F or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF
            or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


def basic_tokenize(text: str) -> list[str]:
    """Stage 1: cleaned, lowercased, accent-free words and punctuation marks.

    >>> basic_tokenize("Hello,  WORLD!\\tNaïve\\u00a0日本")
    ['hello', ',', 'world', '!', 'naive', '日', '本']
    """
    chars = []
    for ch in text:
        cp = ord(ch)
        if cp == 0 or cp == 0xFFFD or _is_control(ch):
            continue
        if _is_whitespace(ch):
            chars.append(" ")
        elif _is_cjk(cp):
            chars.append(f" {ch} ")
        else:
            chars.append(ch)
    words = []
    for word in "".join(chars).split():
        word = unicodedata.normalize("NFD", word.lower())
        word = "".join(c for c in word if unicodedata.category(c) != "Mn")
        current = ""
        for ch in word:
            if _is_punctuation(ch):
                if current:
                    words.append(current)
                words.append(ch)
                current = ""
            else:
                current += ch
        if current:
            words.append(current)
    return words


class WordPiece:
    """A tokenizer over ``vocab`` (token strings in id order, as ``vocab.txt`` lists them)."""

    def __init__(self, vocab: list[str], unk: str = "[UNK]", cls: str = "[CLS]",
                 sep: str = "[SEP]", pad: str = "[PAD]"):
        self.vocab = list(vocab)
        self.ids = {token: i for i, token in enumerate(self.vocab)}
        missing = [t for t in (unk, cls, sep, pad) if t not in self.ids]
        if missing:
            raise ValueError(f"WordPiece: the vocabulary lacks the special tokens {missing}")
        self.unk, self.cls_id, self.sep_id, self.pad_id = (
            unk, self.ids[cls], self.ids[sep], self.ids[pad])

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> WordPiece:
        """A tokenizer reading ``vocab.txt`` (one token per line, the line number is its id)."""
        with open(path, encoding="utf-8") as f:
            return cls(f.read().splitlines())

    def word_pieces(self, word: str) -> list[str]:
        """Stage 2 for one word: greedy longest-match-first pieces, or ``[unk]``."""
        if len(word) > MAX_WORD_CHARS:
            return [self.unk]
        pieces, start = [], 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in self.ids:
                    break
                end -= 1
            if end == start:
                return [self.unk]
            pieces.append(piece)
            start = end
        return pieces

    def tokenize(self, text: str) -> list[str]:
        """The WordPiece tokens of ``text`` (no special tokens)."""
        return [p for word in basic_tokenize(text) for p in self.word_pieces(word)]

    def encode(self, text: str, max_length: int = 256) -> list[int]:
        """``[CLS] tokens [SEP]`` as ids, the tokens cut so the whole fits ``max_length``."""
        if max_length < 2:
            raise ValueError(f"WordPiece: max_length must be >= 2, got {max_length}")
        ids = [self.ids[t] for t in self.tokenize(text)][: max_length - 2]
        return [self.cls_id, *ids, self.sep_id]

    def batch(self, texts: list[str], max_length: int = 256) -> tuple[list, list]:
        """``(ids, mask)``: the encoded texts right-padded with ``[PAD]`` to the longest, and
        1/0 attention masks (1 on real tokens)."""
        encoded = [self.encode(t, max_length) for t in texts]
        width = max(len(e) for e in encoded)
        ids = [e + [self.pad_id] * (width - len(e)) for e in encoded]
        mask = [[1] * len(e) + [0] * (width - len(e)) for e in encoded]
        return ids, mask
