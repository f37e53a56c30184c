"""Deterministic, English-like text and JSON for the workloads.

Real chat payloads compress about 3-4x with zstd; uniform random bytes would not
compress at all and would make every compressing saver look bad. Words drawn from a
Zipf-weighted vocabulary give roughly the same redundancy as real prose.
"""

from __future__ import annotations

import json
import random
from itertools import accumulate

_VOCABULARY = """
the of and to a in is it you that he was for on are with as I his they be at one have
this from or had by hot word but what some we can out other were all there when up use
your how said an each she which do their time if will way about many then them write
would like so these her long make thing see him two has look more day could go come did
number sound no most people my over know water than call first who may down side been
now find any new work part take get place made live where after back little only round
man year came show every good me give our under name very through just form sentence
great think say help low line differ turn cause much mean before move right boy old too
same tell does set three want air well also play small end put home read hand port large
spell add even land here must big high such follow act why ask men change went light
kind off need house picture try us again animal point mother world near build self earth
father head stand own page should country found answer school grow study still learn
plant cover food sun four between state keep eye never last let thought city tree cross
farm hard start might story saw far sea draw left late run while press close night real
life few north open seem together next white children begin got walk example ease paper
group always music those both mark often letter until mile river car feet care second
book carry took science eat room friend began idea fish mountain stop once base hear
horse cut sure watch color face wood main enough plain girl usual young ready above ever
red list though feel talk bird soon body dog family direct pose leave song measure door
product black short numeral class wind question happen complete ship area half rock
order fire south problem piece told knew pass since top whole king space heard best hour
better true during hundred five remember step early hold west ground interest reach fast
verb sing listen six table travel less morning ten simple several vowel toward war lay
against pattern slow center love person money serve appear road map rain rule govern
pull cold notice voice unit power town fine certain fly fall lead cry dark machine note
wait plan figure star box noun field rest correct able pound done beauty drive stood
contain front teach week final gave green oh quick develop ocean warm free minute strong
special mind behind clear tail produce fact street inch multiply nothing course stay
wheel full force blue object decide surface deep moon island foot system busy test
record boat common gold possible plane stead dry wonder laugh thousand ago ran check game
shape equate miss brought heat snow tire bring yes distant fill east paint language among
"""
_WORDS = _VOCABULARY.split()

# Zipf weights: frequent words dominate, as in real prose.
_CUM_WEIGHTS = list(accumulate(1.0 / (rank + 1) for rank in range(len(_WORDS))))


def words(rng: random.Random, count: int) -> list[str]:
    return rng.choices(_WORDS, cum_weights=_CUM_WEIGHTS, k=count)


def sentence(rng: random.Random) -> str:
    chosen = words(rng, rng.randint(6, 18))
    if rng.random() < 0.3:
        chosen.insert(rng.randint(1, len(chosen) - 1), str(rng.randint(2, 2048)))
    text = " ".join(chosen)
    return text[0].upper() + text[1:] + rng.choice(".....?!")


def prose(rng: random.Random, size: int) -> str:
    """Paragraphs of sentences, about `size` UTF-8 bytes (never shorter)."""
    parts: list[str] = []
    length = 0
    while length < size:
        paragraph = " ".join(sentence(rng) for _ in range(rng.randint(3, 6)))
        parts.append(paragraph)
        length += len(paragraph) + 2
    return "\n\n".join(parts)


def search_results(rng: random.Random, size: int) -> str:
    """A JSON tool result (search hits with metadata), about `size` bytes."""
    hits: list[dict[str, object]] = []
    while len(json.dumps({"results": hits})) < size:
        slug = "-".join(words(rng, 4))
        hits.append(
            {
                "id": f"doc-{rng.randrange(10**6):06d}",
                "title": sentence(rng).rstrip(".?!"),
                "url": f"https://docs.example.com/{slug}",
                "score": round(rng.random(), 4),
                "snippet": " ".join(sentence(rng) for _ in range(2)),
                "tags": words(rng, 3),
                "updated": f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
            }
        )
    return json.dumps({"query": " ".join(words(rng, 5)), "results": hits}, indent=1)
