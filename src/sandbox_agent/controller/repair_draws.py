"""How each ``repair`` candidate is asked for: its sampling (greedy first, then seeded
samples, warmed when they repeat), its reply cap (room for the functions shown) and,
with ``--focus rotate``, the one function it asks for."""

from __future__ import annotations

import math
from collections.abc import Sequence

from sandbox_agent.controller.models import RepairOptions
from sandbox_agent.providers.base import Sampling
from sandbox_agent.repair.localise import Site

WARMER = 0.2
WARMEST = 1.2
"""A sample whose code repeats earlier code warms the next one by ``WARMER``, up to
``WARMEST`` (or ``--temperature``, if higher)."""


MIN_REPLY_TOKENS = 1024
"""A candidate's reply cap when what is shown is short (one function: the one-shot
baseline's cap too)."""
CHARS_PER_TOKEN = 3.0
"""Characters of code per token, on the low side (Qwen2.5-Coder's replies here: median
3.9, one in ten below 3.2), so that the room is not too small."""
REPLY_ROOM = 1.25
"""Room for the functions shown, written back whole, with their headers and fences."""


def reply_cap(options: RepairOptions, targets: Sequence[Site]) -> int:
    """The reply cap of a candidate: room to write back every function shown (a model
    often does, changing one), at least ``MIN_REPLY_TOKENS``, at most
    ``--candidate-tokens``. A fixed 1,024 cut off 9 of 299 realrepos replies that wrote
    back three long functions (docs/DECISIONS.md, "A reply cap with room for what is
    shown")."""
    shown = sum(len(site.source) for site in targets)
    room = math.ceil(REPLY_ROOM * shown / CHARS_PER_TOKEN)
    return min(options.candidate_tokens, max(MIN_REPLY_TOKENS, room))


def sampling(
    options: RepairOptions, round_: int, slot: int, asked: int, repeats: int, *, draw: int = 0
) -> Sampling:
    """Greedy for the first draw of round 0's first slot; every other one sampled with
    seed ``seed + 1 + asked`` (``asked``: candidates so far), at ``--temperature`` plus
    ``WARMER`` per candidate so far that repeated earlier code (``repeats``): small models
    copy the code they are shown, and when samples collapse, diversity is what is
    missing. A later round's candidates are all sampled: shown its own failing reply,
    greedy decoding wrote it again (docs/DECISIONS.md, "Repair rounds sample"); so is a
    redraw (``draw`` > 0) of the greedy slot."""
    if round_ == 0 and slot == 0 and draw == 0:
        return Sampling(temperature=0.0, seed=options.seed)
    hottest = max(WARMEST, options.temperature)
    warmth = min(options.temperature + WARMER * repeats, hottest)
    return Sampling(temperature=round(warmth, 3), seed=options.seed + 1 + asked)


def focus(options: RepairOptions, targets: Sequence[Site], round_: int, slot: int) -> Site | None:
    """The one function a sampled first-round candidate asks for, in the order shown
    (``--focus rotate``; docs/DECISIONS.md, "One function per sampled candidate"): shown
    several, a small model most often wrote them all back unchanged. None: the candidate
    asks for every function shown (the greedy one, later rounds, one function shown)."""
    if options.focus == "off" or round_ > 0 or slot == 0 or len(targets) < 2:
        return None
    return targets[(slot - 1) % len(targets)]
