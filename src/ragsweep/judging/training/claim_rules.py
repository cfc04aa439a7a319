"""The rules that make a claim from one sentence of a corpus, supported by its passage or not (FactCC's).

A supported claim is the sentence itself or a rewrite that adds nothing the passage does not say: a short
clause dropped, the sentence cut after a clause, a leading phrase moved to the end, two passage sentences
merged. An unsupported claim changes one number, name, pronoun or negation, adds a detail from elsewhere in
the corpus, or is a sentence from outside the passage. A rule returns None where it does not apply (no
number in the sentence), and `synthetic.make_examples` tries another passage.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence

from ragsweep.chunking.sentence import sentence_bounds

_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*")
_CLAUSE = re.compile(r"\s*(?:[,;:—]|--)\s*")
_LEADERS = set("in on at during since if when while after before because although though unless for with by under "
               "over through throughout today tonight now last this next despite without until once".split())
_PHRASE = re.compile(r"\b(?:in|at|for|by|with|from|during|under|through|after|before|within) (?:the |a |an )?"
                     r"[\w'-]+(?: [\w'-]+){0,3}(?=[,.;:]|$)")
_NOT_SUBJECTS = set("which who whom whose but and or that as so if when while where then".split())
_CONJUNCTION = re.compile(r"^(?:and|but|or|so|yet|nor)\s+", re.IGNORECASE)
_NUMBER = re.compile(r"(?<![\w.])\d{1,3}(?:,\d{3})+(?!\d)|(?<![\w.])\d+(?:\.\d+)?(?=(?:st|nd|rd|th|%)?\b)")
_NUMBER_WORDS = [("two three four five six seven eight nine ten eleven twelve fifteen"),
                 ("twenty thirty forty fifty sixty seventy eighty ninety"), ("hundred thousand million billion"),
                 ("second third fourth fifth sixth seventh eighth ninth tenth"),
                 ("January February March April May June July August September October November December")]
_NUMBER_SWAP = {w: group.split() for group in _NUMBER_WORDS for w in group.split()}
_PRONOUNS = {"he": "she", "she": "he", "his": "her", "her": "his", "him": "her", "we": "they", "they": "we",
             "our": "their", "their": "our", "us": "them", "them": "us", "i": "we", "my": "our"}
_AUX = re.compile(r"(?<!\bnot )(?<!\bnever )\b(is|are|was|were|will|would|can|could|should|must|may|might|shall|"
                  r"has|have|had|does|did)\b(?! not\b| never\b| to\b|['’])")
_NEGATED = re.compile(r"\b(?:not|never) |n't\b|(?<=\bcan)not\b", re.IGNORECASE)
_BACKSHIFT = {"is": "was", "are": "were", "has": "had", "have": "had", "will": "would", "can": "could",
              "shall": "should", "may": "might"}
FRAMES = ("The speaker said that ", "The address states that ", "It was said that ", "The text reports that ",
          "According to the passage, ", "The speech declared that ")
_NOT_NAMES = {"I", "Mr", "Mrs", "Dr", "The", "A", "An", "It", "We", "He", "She", "They", "This", "That", "In",
              "And", "But", "For", "Our", "My", "No", "Not", "If", "So", "To", "As", "On", "At", "By", "Of"}
_NAME = re.compile(r"\b[A-Z][a-z]+(?:\s+(?:of\s+)?[A-Z][a-z]+)*")


class Corpus:
    """The sentences of a corpus, grouped by document, plus its names (capitalised word runs)."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.docs = [sents for sents in (_sentences(text) for text in texts) if sents]
        if not self.docs:
            raise ValueError("the corpus has no sentences to make claims from; give it documents with text")
        self.names = sorted({name for sents in self.docs for sent in sents for name in _names(sent)})
        self.lowercase = {w for sents in self.docs for s in sents for w in _WORD.findall(s) if w.islower()}

    def passage(self, rng: random.Random) -> tuple[int, int, int]:
        """(document, first sentence, end) of a window of 1-3 sentences and at most ~80 words: the size of a
        retrieved passage's sentence window, and short inputs keep training on a CPU to minutes."""
        doc = rng.choices(range(len(self.docs)), weights=[len(d) for d in self.docs])[0]
        size = rng.choice((1, 2, 2, 3))
        first = rng.randrange(max(1, len(self.docs[doc]) - size + 1))
        end = min(first + size, len(self.docs[doc]))
        while end - first > 1 and sum(len(s.split()) for s in self.docs[doc][first:end]) > 80:
            end -= 1
        return doc, first, end


def outside(corpus: Corpus, kind: str, doc: int, first: int, end: int, source: str,
            rng: random.Random) -> str | None:
    """A sentence from another document, from this one outside the passage (±3 sentences), or a clause of
    such a sentence attached to the source as an invented detail."""
    if kind == "other_document":
        if len(corpus.docs) < 2:
            return None
        sents = corpus.docs[rng.choice([d for d in range(len(corpus.docs)) if d != doc])]
        candidates = sents
    else:
        sents = corpus.docs[doc]
        candidates = sents[: max(0, first - 3)] + sents[end + 3:]
    candidates = [s for s in candidates if usable_sentence(s)]
    if not candidates:
        return None
    other = rng.choice(candidates)
    if kind != "invented":
        return other
    phrases = _PHRASE.findall(other)
    if phrases and rng.random() < 0.5:  # 'in Philadelphia', 'for two years'
        return f"{source.rstrip('.!?;: ')} {rng.choice(phrases)}."
    clauses = [_CONJUNCTION.sub("", c) for c in _clauses(other) if len(c.split()) >= 3]
    if not clauses:
        return None
    detail = _lower_first(rng.choice(clauses), corpus)
    return f"{source.rstrip('.!?;: ')}{rng.choice((', and ', ', ', ' and '))}{detail}."


def _clause_drop(source: str, corpus: Corpus, passage: str, rng: random.Random) -> str | None:
    """A short aside left out: 'The credit, moreover, would improve.' -> 'The credit would improve.'"""
    parts = _clauses(source)
    asides = [i for i, part in enumerate(parts) if len(part.split()) <= 5 and len(parts) > 1]
    if not asides:
        return None
    drop = rng.choice(asides)
    kept = [part for i, part in enumerate(parts) if i != drop]
    claim = _sentence(_upper_first(", ".join(kept)) if drop == 0 else ", ".join(kept))
    return claim if len(claim.split()) >= 6 else None


def _fragment(source: str, corpus: Corpus, passage: str, rng: random.Random) -> str | None:
    """The sentence cut after one of its clauses: 'Our priority is security, and that will show.' -> first part."""
    parts = _clauses(source)
    cuts = [i for i in range(1, len(parts)) if len(" ".join(parts[:i]).split()) >= 6]
    return _sentence(", ".join(parts[: rng.choice(cuts)])) if cuts else None


def _reorder(source: str, corpus: Corpus, passage: str, rng: random.Random) -> str | None:
    """A leading adverbial moved to the end: 'In 1789, we X.' -> 'We X in 1789.'"""
    head, sep, rest = source.partition(", ")
    if not sep or not 2 <= len(head.split()) <= 6 or len(rest.split()) < 4 or not source.endswith(".") \
            or head.split()[0].lower() not in _LEADERS or rest.split()[0].lower() in _NOT_SUBJECTS:
        return None
    return f"{_upper_first(rest.rstrip('.!?;: '))} {_lower_first(head, corpus)}."


def merge(source: str, other: str, corpus: Corpus, rng: random.Random) -> str:
    """Pieces of two passage sentences in one claim: supported because both are in the passage."""
    first = _CONJUNCTION.sub("", max(_clauses(source), key=len))
    second = _lower_first(_CONJUNCTION.sub("", max(_clauses(other), key=len)), corpus)
    return f"{_upper_first(first)}, and {second}."


def _changed_number(source: str, corpus: Corpus, passage: str, rng: random.Random) -> str | None:
    """One number changed: digits (a year by 1-15, others scaled), a number word, an ordinal or a month."""
    spots = [(m.start(), m.end(), _new_number(m.group(), rng)) for m in _NUMBER.finditer(source)]
    spots += [(m.start(), m.end(), _swap_word(m.group(), rng)) for m in _WORD.finditer(source)
              if m.group().lower() in _NUMBER_SWAP or m.group() in _NUMBER_SWAP]
    return _replace_one(source, spots, rng)


def _entity(source: str, corpus: Corpus, passage: str, rng: random.Random) -> str | None:
    """A name replaced by another of the corpus's names, or two names of the sentence swapped."""
    names = [m for m in _NAME.finditer(source) if _mid_sentence(source, m.start()) and m.group() in corpus.names]
    if not names or len(corpus.names) < 2:
        return None
    pair = sorted({m.group(): m for m in names}.values(), key=lambda m: m.start())
    if len(pair) >= 2 and rng.random() < 0.5:
        a, b = rng.sample(pair, 2) if len(pair) > 2 else pair
        a, b = sorted((a, b), key=lambda m: m.start())
        return source[: a.start()] + b.group() + source[a.end(): b.start()] + a.group() + source[b.end():]
    spot = rng.choice(names)
    for _ in range(20):
        other = rng.choice(corpus.names)
        if other not in passage and (len(other.split()) > 1) == (len(spot.group().split()) > 1):
            return source[: spot.start()] + other + source[spot.end():]
    return None


def _pronoun(source: str, corpus: Corpus, passage: str, rng: random.Random) -> str | None:
    """One pronoun changed in person, number or gender: he/she, we/they, our/their, I/we."""
    spots = [(m.start(), m.end(), _same_case(m.group() if m.start() == 0 else m.group().lower(),
                                              _PRONOUNS[m.group().lower()]))
             for m in _WORD.finditer(source) if m.group().lower() in _PRONOUNS]
    return _replace_one(source, spots, rng)


def _negation(source: str, corpus: Corpus, passage: str, rng: random.Random) -> str | None:
    """One negation flipped, at any place the sentence allows: a 'not'/'never'/n't removed, or 'not' or 'never'
    put after an auxiliary verb. No antonyms: prefix and word flips (likely/unlikely, nothing/something) were
    tried in recipe 3 and made the synthetic task harder without helping (see benchmarks/judges.py's notes)."""
    edits = []
    for m in _NEGATED.finditer(source):
        before = source[: m.start()]
        if m.group() == "n't":  # can't -> can, won't -> will, don't -> do
            before = re.sub(r"(ca|wo)$", lambda w: {"ca": "can", "wo": "will"}[w.group().lower()], before)
        edits.append((before, source[m.end():]))
    for m in _AUX.finditer(source):
        word = "never" if m.group() in ("has", "have", "had", "was", "were") and rng.random() < 0.5 else "not"
        edits.append((f"{source[: m.end()]} {word}", source[m.end():]))
    if not edits:
        return None
    before, after = rng.choice(edits)
    return before + after


RULES: dict[str, Callable[[str, Corpus, str, random.Random], str | None]] = {
    "sentence": lambda source, corpus, passage, rng: source, "clause_drop": _clause_drop, "fragment": _fragment,
    "reorder": _reorder, "number": _changed_number, "entity": _entity, "pronoun": _pronoun, "negation": _negation,
}


def framed(claim: str, frame: str, corpus: Corpus) -> str:
    """A reporting frame; the past-tense ones shift the claim's present tense back, as reported speech does."""
    if " said " in frame or "declared" in frame:
        claim = re.sub(r"\b(is|are|has|have|will|can|shall|may)\b", lambda m: _BACKSHIFT[m.group()], claim)
    return frame + _lower_first(claim, corpus)


def _new_number(number: str, rng: random.Random) -> str:
    value = float(number.replace(",", ""))
    if 1600 <= value <= 2100 and "." not in number:  # a year
        changed = value + rng.choice((-1, 1)) * rng.randint(1, 15)
    else:
        changed = value * rng.choice((0.5, 2, 3, 1.5, 0.25, 10)) if value > 3 else value + rng.randint(2, 9)
    text = f"{changed:,.0f}" if "," in number else (f"{changed:g}" if "." in number else f"{int(changed)}")
    return text if text != number else str(int(value) + 1)


def _swap_word(word: str, rng: random.Random) -> str:
    group = _NUMBER_SWAP.get(word.lower()) or _NUMBER_SWAP[word]
    return _same_case(word, rng.choice([w for w in group if w.lower() != word.lower()]))


def _replace_one(text: str, spots: list[tuple[int, int, str]], rng: random.Random) -> str | None:
    if not spots:
        return None
    start, end, new = rng.choice(spots)
    return text[:start] + new + text[end:]


def _sentences(text: str) -> list[str]:
    return [" ".join(text[a:b].split()) for a, b in sentence_bounds(text) if text[a:b].strip()]


def _names(sentence: str) -> list[str]:
    """Capitalised word runs inside the sentence: people, places, institutions (no tagger needed)."""
    return [m.group() for m in _NAME.finditer(sentence)
            if _mid_sentence(sentence, m.start()) and m.group() not in _NOT_NAMES]


def _mid_sentence(sentence: str, start: int) -> bool:
    """Whether a capital at `start` is inside a sentence, not its first word or the first after a quote or colon."""
    return start > 0 and not re.search(r"(?:^|[.!?:\"“(]|--)\s*$", sentence[:start])


def usable_sentence(sentence: str) -> bool:
    """Whether a sentence is fit to make claims from: 6-60 words, some lower case, ends as a sentence ends."""
    return 6 <= len(sentence.split()) <= 60 and any(c.islower() for c in sentence) and sentence[-1] in ".!?\"”’)"


def _clauses(sentence: str) -> list[str]:
    return [part.strip() for part in _CLAUSE.split(sentence.rstrip(".!?;: ")) if part.strip()]


def _sentence(text: str) -> str:
    return text.rstrip(".!?;:, ") + "."


def normal(text: str) -> str:
    """The words and numbers of a text, lower-cased: equal for a claim a rule left unchanged."""
    return " ".join(_WORD.findall(text.lower())) + " ".join(re.findall(r"\d+", text))


def _same_case(old: str, new: str) -> str:
    return _upper_first(new) if old[:1].isupper() else new.lower() if old.islower() else new


def _upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def _lower_first(text: str, corpus: Corpus) -> str:
    """Lower-cases the first word unless the corpus only writes it capitalised (a name, 'I')."""
    first = _WORD.match(text)
    if first is None or first.group().lower() not in corpus.lowercase:
        return text
    return text[:1].lower() + text[1:]
