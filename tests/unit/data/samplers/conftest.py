"""A few hundred real sentences: enough for every sampler, quick to sample."""

import pytest

from nerplat.data.corpus import Corpus


@pytest.fixture(scope="session")
def small_conll(conll2003) -> Corpus:
    return Corpus("conll2003[:400]", conll2003.train[:400], conll2003.dev[:50], conll2003.test[:50], dict(conll2003.checksums))
