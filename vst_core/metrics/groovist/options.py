"""GROOVIST's own settings (θ and its presets, the ablations −P and −C, phrase units, expressions,
the profile), declared once as :class:`~vst_core.contract.Option`, and :func:`groovist_settings`
to read them typed. Earlier versions signed them in every run that loads CLIP (``needs``), so the
ids of those runs stay.

>>> [o.cli_flag for o in OPTIONS]
['--theta', '--no-penalty', '--weighting', '--nouns', '--expressions', '--grounding-profile']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, cast

from vst_core.contract import Need, Option, SettingsLike
from vst_core.formulas.grounding import THETA_PRESETS, resolve_theta
from vst_core.formulas.variants import GroundingProfile


def _theta_check(value: object) -> str | None:
    """Why ``value`` is no θ (a preset's name or a number), or None."""
    try:
        resolve_theta(value if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value))
    except ValueError:
        return f"must be a number or one of {', '.join(THETA_PRESETS)}; got {value!r}"
    return None


_CLIP: tuple[Need, ...] = ("clip",)

#: GROOVIST's settings, in the order of ``vst score --help``.
OPTIONS: tuple[Option, ...] = (
    Option(
        "theta",
        "VIST",
        "GROOVIST threshold: VIST (0.6159), AESOP (0.5950), VWP (0.6194), custom (0.5), a number, or 'dataset' (the mean "
        "NP score over INPUT, computed first and recorded in the signature)",
        label="θ preset",
        presets=tuple(THETA_PRESETS.items()),
        bounds=(0.0, 1.5),
        check=_theta_check,
        needs=_CLIP,
        signed_value=lambda settings: theta_value(settings),
        metavar="NAME|X",
    ),
    Option(
        "penalize",
        True,
        "ablation -P: no θ penalty",
        kind="bool",
        flag="--no-penalty",
        label="Penalty below θ (untick: ablation −P)",
        needs=_CLIP,
    ),
    Option(
        "weighting",
        "concreteness",
        "NP weights: Brysbaert concreteness (GROOVIST), idf (ablation -C +idf) or none (-C)",
        choices=("concreteness", "idf", "none"),
        needs=_CLIP,
    ),
    Option(
        "units",
        "phrases",
        "ablation: head nouns instead of noun phrases",
        choices=("phrases", "nouns"),
        flag="--nouns",
        const="nouns",
        needs=_CLIP,
    ),
    Option(
        "expressions",
        False,
        "concreteness: try the whole phrase and multi-word expressions ('parking lot') first",
        kind="bool",
        needs=_CLIP,
    ),
    Option(
        "grounding_profile",
        "paper",
        "reference: the GROOVIST code's text side and crops (a phrase dropped only when it is a pronoun as a whole, "
        "concreteness of whitespace words with WordNet noun lemmas, Pillow's rounding of boxes, en_core_web_trf when "
        "installed)",
        choices=("paper", "reference"),
        needs=_CLIP,
    ),
)


@dataclass(frozen=True)
class GroovistSettings:
    """GROOVIST's settings of a run, typed (:data:`OPTIONS`); ``theta_value`` is θ as a number."""

    theta: str
    penalize: bool
    weighting: Literal["concreteness", "idf", "none"]
    units: Literal["phrases", "nouns"]
    expressions: bool
    grounding_profile: GroundingProfile

    @property
    def theta_value(self) -> float:
        return resolve_theta(self.theta)


def groovist_settings(settings: SettingsLike) -> GroovistSettings:
    """GROOVIST's settings of ``settings``, each set or at its default.

    >>> from vst_core.config import Settings
    >>> g = groovist_settings(Settings(theta="AESOP", penalize=False))
    >>> round(g.theta_value, 4), g.penalize, g.weighting
    (0.595, False, 'concreteness')
    """
    values = {o.setting: settings.option(o.setting) for o in OPTIONS}
    return GroovistSettings(**cast(dict[str, object], values))  # type: ignore[arg-type]


def theta_value(settings: SettingsLike) -> float:
    """θ of a run as a number (a preset's value, or the number given)."""
    return resolve_theta(str(settings.option("theta")))
