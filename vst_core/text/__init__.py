"""Text processing: spaCy tokens and noun phrases (phrases), the public code's NLTK sentences and
tokens (public), WordNet noun lemmas (wordnet), concreteness ratings (concreteness)."""
