"""The shared corpora read whole: every one agrees with the folder's manifest.json, and the GMB subset
of Wang & Wang 2022 is the same fixed split for every seed. Minutes on a busy machine, hence here."""

import json

import pytest

from nerplat.config.trial import DatasetRef
from nerplat.data.conll import read_conll, sentences_sha256
from nerplat.data.corpora import load_corpus
from nerplat.data.corpus_stats import corpus_stats, split_stats

MANIFEST_FIELDS = ("sentences", "tokens", "mentions_total", "mentions_per_type", "pct_B", "pct_I", "pct_O")
CORPORA = ["anatem", "anem", "bc5cdr", "conll2003", "linnaeus", "ncbi_disease", "s800", "wnut17"]
GMB_SUBSET_TEST_SHA256 = "ec78539782367889d82d6c2dbabe512199749687aa7a10b0e36f83813052692a"


def _manifest(data_root):
    return json.loads((data_root / "manifest.json").read_text())["corpora"]


@pytest.mark.slow
@pytest.mark.parametrize("name", CORPORA)
def test_stats_agree_with_the_manifest(name, data_root):
    expected = _manifest(data_root)[name]["splits"]
    ours = corpus_stats(load_corpus(DatasetRef(name=name)))["splits"]
    assert set(ours) == set(expected)
    for split, numbers in expected.items():
        assert {k: ours[split][k] for k in MANIFEST_FIELDS} == {k: numbers[k] for k in MANIFEST_FIELDS}, split


@pytest.mark.slow
def test_gmb_all_agrees_with_the_manifest(data_root):
    expected = _manifest(data_root)["gmb"]["splits"]["all"]
    read = read_conll(data_root / "gmb" / "all.txt")
    ours = split_stats(read.sentences)
    assert read.sha256 == expected["sha256"]
    assert {k: ours[k] for k in MANIFEST_FIELDS} == {k: expected[k] for k in MANIFEST_FIELDS}


@pytest.mark.slow
def test_gmb_subset_is_wang_and_wang_s_subset_with_a_fixed_split(data_root):
    subset = load_corpus(DatasetRef(name="gmb_subset"), seed=5)
    assert (len(subset.train), len(subset.test), subset.dev) == (2249, 750, None)
    assert sum(len(s) for s in subset.train + subset.test) == 66161
    # the split's seed is fixed, not the trial's: this checksum is the same for every seed
    assert subset.checksums["test"] == sentences_sha256(subset.test) == GMB_SUBSET_TEST_SHA256
