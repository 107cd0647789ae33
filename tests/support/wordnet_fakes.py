"""A WordNet folder in the wndb(5) format, written by hand: two synsets, for synonym tests."""

from pathlib import Path

HEADER = "  1 This software and database is being provided to you, the LICENSEE, by  \n"


def write_wordnet(folder: Path, line_end: str = "\n") -> Path:
    """One noun synset {car, auto, railway_car} and one adjective synset {galore(ip), abounding}."""
    synsets = {
        "noun": ["02958343 06 n 03 car 0 auto 0 railway_car 0 000 | a motor vehicle"],
        "adj": ["00015 00 s 02 galore(ip) 0 abounding 0 000 | plentiful"],
    }
    lemmas = {"noun": {"car": [0], "auto": [0], "railway_car": [0]}, "adj": {"galore": [0], "abounding": [0]}}
    for pos in ("noun", "verb", "adj", "adv"):
        data, offsets = HEADER, []
        for synset in synsets.get(pos, []):
            offsets.append(len(data))
            data += synset.replace(synset.split()[0], f"{len(data):08d}", 1) + "  \n"
        (folder / f"data.{pos}").write_bytes(data.replace("\n", line_end).encode())
        index = HEADER + "".join(
            f"{lemma} {pos[0]} 1 0 1 0 {' '.join(f'{offsets[i]:08d}' for i in which)}  \n"
            for lemma, which in sorted(lemmas.get(pos, {}).items())
        )
        (folder / f"index.{pos}").write_text(index)
    return folder
