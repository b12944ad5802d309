"""The training prompts: built by the project from templates and word lists with a fixed seed.

None of them is a prompt of the measured suites (runner/prompts/suite-2.json and categories.json
stay held out: ``held_out_overlap`` checks that no training prompt shares a 40-character run with
them). Half are chat turns in the target's own template (SmolLM2's ChatML), half are the starts of
documents to continue, in the genres the suites measure (code, arithmetic, reports, translation,
questions and answers, records, conversations, stories, lists), because the suites send raw text.
The target's greedy answers to them are the training data (train.py generates them).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

SEED = 20261207
SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"

SUBJECTS = [
    "volcanoes",
    "honey bees",
    "the printing press",
    "tide pools",
    "solar panels",
    "bread baking",
    "chess openings",
    "the water cycle",
    "electric bicycles",
    "coral reefs",
    "compost",
    "glaciers",
    "the Roman roads",
    "sourdough starters",
    "wind turbines",
    "lighthouses",
    "bird migration",
    "origami",
    "public libraries",
    "vaccines",
    "rainbows",
    "the moon's phases",
    "recycling plastic",
    "jazz music",
    "desert plants",
    "trains in Japan",
    "coffee roasting",
    "the human heart",
    "earthquakes",
    "photosynthesis",
    "old maps",
    "tea ceremonies",
    "mushrooms",
    "submarines",
    "city parks",
    "wool spinning",
    "the metric system",
    "penguins",
    "paper money",
    "kites",
    "street markets",
    "rock climbing",
    "the immune system",
    "clocks",
    "canals",
    "fireflies",
    "beekeeping tools",
    "hot air balloons",
    "mountain weather",
    "friendly robots",
]
PEOPLE = [
    "a nurse",
    "a student",
    "a farmer",
    "a pilot",
    "a librarian",
    "a baker",
    "a child",
    "an engineer",
    "a painter",
    "a retired teacher",
    "a bus driver",
    "a gardener",
]
PLACES = [
    "a small harbour town",
    "a mountain village",
    "a busy city",
    "an island",
    "a desert camp",
    "a river valley",
    "a train station",
    "a school",
    "a forest cabin",
    "a market square",
]
ITEMS = [
    "apples",
    "notebooks",
    "bolts",
    "tickets",
    "bottles",
    "seeds",
    "chairs",
    "candles",
    "batteries",
    "loaves",
    "stamps",
    "tiles",
]
LANGS = [
    ("French", "English"),
    ("German", "English"),
    ("English", "Spanish"),
    ("English", "Italian"),
    ("Portuguese", "English"),
    ("English", "Dutch"),
]
SENTENCES = [
    "The museum is closed on Mondays.",
    "Please leave your shoes at the door.",
    "We missed the last bus home.",
    "My brother plays the violin every evening.",
    "The soup needs more salt.",
    "It will rain tomorrow afternoon.",
    "Where is the nearest pharmacy?",
    "The children are reading in the garden.",
    "I would like two tickets for the concert.",
    "The bridge was built in 1890.",
]
FUNCS = [
    ("count_vowels", "text: str", "int", "Return how many vowels the text holds."),
    ("merge_sorted", "a: list[int], b: list[int]", "list[int]", "Merge two sorted lists."),
    ("is_palindrome", "word: str", "bool", "Tell whether a word reads the same backwards."),
    ("chunk", "items: list, size: int", "list[list]", "Split items into lists of size."),
    ("fahrenheit", "celsius: float", "float", "Convert Celsius to Fahrenheit."),
    ("word_counts", "text: str", "dict[str, int]", "Count each word of the text."),
    ("flatten", "nested: list[list[int]]", "list[int]", "Flatten one level of nesting."),
    ("median", "values: list[float]", "float", "Return the median of the values."),
    ("slugify", "title: str", "str", "Turn a title into a URL slug."),
    ("running_total", "values: list[int]", "list[int]", "Return the running totals."),
]

CHAT_TEMPLATES = [
    "Explain {subject} to {person} in a few short paragraphs.",
    "Write a short story about {person} in {place} who discovers something about {subject}.",
    "Give me five interesting facts about {subject}.",
    "What are the main advantages and disadvantages of {subject}?",
    "Write a haiku and then a limerick about {subject}.",
    "Summarise what {person} should know about {subject} before visiting {place}.",
    'Translate into {lang_b}: "{sentence}"',
    "Write a Python function `{fname}({fargs}) -> {fret}`. {fdoc} Add a short docstring.",
    "A shop sells {n1} {item} a day for {n2} days. How many {item} is that in total? Show your steps.",
    "If I have {n1} {item} and give away {n3}, then buy {n2} more, how many do I have?",
    "Write an email from {person} to a neighbour about {subject}.",
    "List the steps to learn about {subject} as a beginner.",
    "Compare {subject} and {subject2} in a short table.",
    "What is the difference between {subject} and {subject2}?",
    "Describe a day in the life of {person} in {place}.",
    "Answer briefly: why do people care about {subject}?",
    "Write a product description for a book about {subject}.",
    "Extract the names and numbers from this note: {person} bought {n1} {item} and {n2} tickets on {day}.",
]
DOC_TEMPLATES = [
    '# {fname}.py\n\n\ndef {fname}({fargs}) -> {fret}:\n    """{fdoc}"""\n',
    "A guide to {subject}\n\nChapter 1. Where it all began\n\n",
    "Question: {person} has {n1} {item} and buys {n2} more. How many {item} are there now?\nAnswer:",
    "{lang_a}: {sentence}\n{lang_b}:",
    "Meeting notes - {place}\nAttendees: {person}, a treasurer, two volunteers\n\n1.",
    "Q: What is the most important thing to know about {subject}?\nA:",
    "Dear friend,\n\nI am writing to you from {place}, where I have been learning about {subject}.",
    "INVENTORY REPORT\nItem: {item}\nOpening stock: {n1}\nReceived: {n2}\nSold: {n3}\n",
    "User: Can you tell me about {subject}?\nAssistant:",
    "Once upon a time, in {place}, there lived {person} who loved {subject}.",
    "Top 10 tips for {subject}:\n\n1.",
    "Lecture transcript: an introduction to {subject}.\n\nGood morning, everyone. Today",
    "Recipe notes from {place}.\nIngredients:\n-",
    "Abstract. We study {subject} in {place} over {n1} days.",
    "def test_{fname}():\n    assert",
    "The history of {subject} can be divided into three periods.",
]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def _fill(template: str, rng: random.Random) -> str:
    fname, fargs, fret, fdoc = rng.choice(FUNCS)
    lang_a, lang_b = rng.choice(LANGS)
    subject, subject2 = rng.sample(SUBJECTS, 2)
    return template.format(
        subject=subject,
        subject2=subject2,
        person=rng.choice(PEOPLE),
        place=rng.choice(PLACES),
        item=rng.choice(ITEMS),
        lang_a=lang_a,
        lang_b=lang_b,
        sentence=rng.choice(SENTENCES),
        fname=fname,
        fargs=fargs,
        fret=fret,
        fdoc=fdoc,
        n1=rng.randint(2, 90),
        n2=rng.randint(2, 60),
        n3=rng.randint(1, 20),
        day=rng.choice(DAYS),
    )


def chat_text(user: str) -> str:
    """SmolLM2's ChatML turn with its default system message, ready for the assistant."""
    return (
        f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n"
        "<|im_start|>assistant\n"
    )


def build_prompts(count: int, seed: int = SEED) -> list[dict]:
    """count distinct prompts, half chat turns and half documents, in a seeded order."""
    rng = random.Random(seed)
    seen: set[str] = set()
    prompts: list[dict] = []
    while len(prompts) < count:
        chat = len(prompts) % 2 == 0
        body = _fill(rng.choice(CHAT_TEMPLATES if chat else DOC_TEMPLATES), rng)
        text = chat_text(body) if chat else body
        if text in seen:
            continue
        seen.add(text)
        prompts.append({"kind": "chat" if chat else "document", "text": text})
    return prompts


def held_out_texts(repo: Path) -> list[tuple[str, str]]:
    """(category, text) of every measured prompt: the suites that stay out of training."""
    out = []
    suite = json.loads((repo / "runner/prompts/suite-2.json").read_text())
    for category in suite["categories"]:
        for prompt in category["prompts"]:
            out.append((category["name"], prompt["text"] if isinstance(prompt, dict) else prompt))
    cats = json.loads((repo / "runner/prompts/categories.json").read_text())
    for category in cats["categories"]:
        for prompt in category["prompts"]:
            out.append((category["name"], prompt))
    return out


def overlaps_held_out(
    prompts: list[dict], held_out: list[tuple[str, str]], run: int = 40
) -> list[bool]:
    """For each training prompt, whether it shares a run of `run` characters with a measured one."""
    grams = set()
    for _, text in held_out:
        for i in range(0, max(1, len(text) - run + 1)):
            grams.add(text[i : i + run])
    return [
        any(p["text"][i : i + run] in grams for i in range(0, max(1, len(p["text"]) - run + 1)))
        for p in prompts
    ]
