"""RoViST-C's default names, apart so its scorers and its spec read them without importing each other."""

#: The next-sentence model used by default (BERT's NSP head, the paper's kind of pair model).
NSP_MODEL = "bert-base-uncased"
