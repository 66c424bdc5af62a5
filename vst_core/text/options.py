"""The text side's settings, which every run signs: how a story given as one text is split into
sentences and which spaCy pipeline finds noun phrases.

>>> COMPONENT.options[0].cli_flag, COMPONENT.options[0].default
('--split', 'punkt')
"""

from __future__ import annotations

from vst_core.contract.spec import Component, Option

#: The text side's settings (signed in every run: no ``needs``).
COMPONENT = Component(
    name="text",
    title="Text",
    options=(
        Option(
            "splitter",
            "punkt",
            "how a story given as one text is split into sentences: NLTK Punkt, as the public RoViST and dHM code "
            "(fast), or the spaCy pipeline's parser",
            flag="--split",
            choices=("punkt", "spacy"),
        ),
        Option(
            "spacy_model",
            None,
            "spaCy pipeline for noun phrases (and for --split spacy); default: first installed English one",
            metavar="NAME",
        ),
    ),
)
