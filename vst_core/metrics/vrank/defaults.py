"""Vrank's default names, apart so its ranker and its spec read them without importing each other."""

#: The encoder ``vst train-vrank`` starts from (SimCSE, the paper's kind of encoder).
BASE_ENCODER = "princeton-nlp/sup-simcse-bert-base-uncased"
